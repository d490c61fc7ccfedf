/**
 * One invocation of a run (DESIGN.md, "One invocation"): take the lease, load the journal,
 * execute the workflow against it, and persist how it ended. Transports (the local timer loop,
 * the SQS batch, the test runtime) all call {@link Engine.invoke} with a run id.
 */
import type { Blocker, StepEvent } from "./execution.ts";
import { Execution } from "./execution.ts";
import type { AnyWorkflow } from "./definition.ts";
import { serializeError } from "./error-codec.ts";
import { InvalidInputError, InvocationBudgetError, JournalFormatError, type SerializedError, UnknownWorkflowError } from "./errors.ts";
import { JournalView } from "./journal-view.ts";
import { type JournalRecord, keyOf, parseRecord } from "./records.ts";
import type { ApprovalLinks, Clock, JournalStore, Lease, WakeQueue } from "../ports.ts";
import type { Registry } from "./registry.ts";
import { zodIssues } from "./zod-issues.ts";

export type InvocationResult =
  | { status: "completed"; result: unknown }
  | { status: "failed"; error: SerializedError }
  | { status: "suspended"; wakeAt: number | undefined; waitingFor: string }
  /** Another invocation holds the lease; it will finish the work. */
  | { status: "busy" }
  | { status: "missing" }
  /** The run had already finished; nothing to do. */
  | { status: "finished" }
  /** The lease was lost mid-invocation (expired and taken, or the run was cancelled). */
  | { status: "lost-lease" };

/** A structured log line. */
export type LogEntry = Record<string, unknown> & { event: string; runId: string };

export interface EngineOptions {
  store: JournalStore;
  wakes: WakeQueue;
  clock: Clock;
  workflows: Registry;
  /** Identifies this process in leases. */
  owner: string;
  /** Lease length; renewed at a third of it while the invocation runs. Default 30 s. */
  leaseTtlMs?: number;
  /** Invocations one run may take before it fails (a guard against runaway self-wakes). Default 10,000. */
  maxInvocations?: number;
  /** Mints approval links for `waitForSignal({ notify })`. */
  links?: ApprovalLinks;
  log?: (entry: LogEntry) => void;
}

export interface InvokeOptions {
  /** Checkpoint instead of starting another step (e.g. Lambda time running out). */
  shouldYield?: () => boolean;
  /** Decides whether a held lease may be taken over (e.g. its local owner process is dead). */
  mayBreak?: (lease: Lease) => boolean;
  onStep?: (event: StepEvent) => void;
}

/** After a fault, the run is due again this soon (the watchdog's backstop if no wake comes). */
const RETRY_AFTER_FAULT_MS = 5_000;

export class Engine {
  private readonly ttl: number;

  constructor(private readonly o: EngineOptions) {
    this.ttl = o.leaseTtlMs ?? 30_000;
  }

  async invoke(runId: string, options: InvokeOptions = {}): Promise<InvocationResult> {
    const { store, clock } = this.o;
    let acquired = await store.acquireLease(runId, { owner: this.o.owner, now: clock.now(), ttlMs: this.ttl });
    if (!acquired.acquired && acquired.reason === "held" && acquired.run?.lease && options.mayBreak?.(acquired.run.lease)) {
      acquired = await store.acquireLease(runId, { owner: this.o.owner, now: clock.now(), ttlMs: this.ttl, ifToken: acquired.run.lease.token });
    }
    if (!acquired.acquired) return { status: acquired.reason === "held" ? "busy" : acquired.reason };
    const token = acquired.lease.token;
    const started = clock.now();
    const lease = { lost: false };
    const heartbeat = setInterval(() => {
      store.renewLease(runId, token, clock.now(), this.ttl).then(
        (renewed) => {
          if (!renewed) lease.lost = true; // taken over or cancelled: start nothing new
        },
        () => {},
      );
    }, Math.max(10, Math.floor(this.ttl / 3)));
    heartbeat.unref();
    try {
      const result = await this.execute(runId, token, acquired.run.invocations, options, () => !lease.lost);
      this.o.log?.({ event: "invocation", runId, token, outcome: result.status, durationMs: clock.now() - started });
      return result;
    } catch (err) {
      // A fault (the store, a deploy without this workflow): free the run for a retry soon, so a
      // redelivered wake does not find it "busy" until the lease expires. Best effort.
      if (!lease.lost) await store.releaseLease(runId, token, { now: clock.now(), wakeAt: clock.now() + RETRY_AFTER_FAULT_MS, waitingFor: "retry" }).catch(() => false);
      throw err;
    } finally {
      clearInterval(heartbeat);
    }
  }

  private async execute(runId: string, token: number, invocations: number, options: InvokeOptions, ownsLease: () => boolean): Promise<InvocationResult> {
    const { store, clock } = this.o;
    const journal = await store.loadJournal(runId);
    if (!journal) return { status: "missing" };
    const workflow = this.o.workflows.get(journal.run.workflow);
    // Another deploy may know it: `invoke` frees the run for a later attempt and the transport retries.
    if (!workflow) throw new UnknownWorkflowError(journal.run.workflow);
    const budget = this.o.maxInvocations ?? 10_000;
    if (invocations > budget) return this.finish(runId, token, { type: "failed", error: serializeError(new InvocationBudgetError(runId, budget)) });

    let view: JournalView;
    try {
      view = JournalView.parse(runId, journal.records);
    } catch (err) {
      if (err instanceof JournalFormatError) return this.finish(runId, token, { type: "failed", error: serializeError(err) });
      throw err;
    }
    const input = workflow.input.safeParse(journal.run.input);
    if (!input.success) {
      const err = new InvalidInputError(`run "${runId}": its recorded input no longer fits the workflow's schema`, zodIssues(input.error));
      return this.finish(runId, token, { type: "failed", error: serializeError(err) });
    }

    const execution = new Execution({
      runId,
      workflow,
      input: input.data,
      journal: view,
      now: () => clock.now(),
      append: (record) => this.append(runId, record),
      ownsLease,
      ...(options.shouldYield ? { shouldYield: options.shouldYield } : {}),
      ...(this.o.links ? { links: this.o.links } : {}),
      runCreatedAt: journal.run.createdAt,
      onStep: (event) => {
        options.onStep?.(event);
        if (event.outcome !== "replayed") this.o.log?.({ ...event, event: "step" });
      },
    });
    const outcome = await execution.run();
    for (const key of execution.cancelledWakes) await this.o.wakes.cancel(runId, key).catch(() => {});
    if (outcome.type === "aborted") {
      if (outcome.leaseLost) return { status: "lost-lease" };
      throw outcome.error;
    }
    if (outcome.type !== "suspended") return this.finish(runId, token, outcome);
    return this.suspend(runId, token, outcome.blockers, execution);
  }

  private async append(runId: string, record: JournalRecord): Promise<{ record: JournalRecord; won: boolean }> {
    const key = keyOf(record);
    const res = await this.o.store.appendRecord(runId, { key, body: record });
    if (res.written) return { record, won: true };
    return { record: parseRecord(runId, key, res.existing.body), won: false };
  }

  private async finish(
    runId: string,
    token: number,
    outcome: { type: "completed"; result: unknown } | { type: "failed"; error: SerializedError },
  ): Promise<InvocationResult> {
    const now = this.o.clock.now();
    const ok = await this.o.store.finishRun(
      runId,
      outcome.type === "completed"
        ? { now, status: "completed", result: outcome.result, token }
        : { now, status: "failed", error: outcome.error, token },
    );
    if (!ok) return { status: "lost-lease" };
    return outcome.type === "completed" ? { status: "completed", result: outcome.result } : { status: "failed", error: outcome.error };
  }

  /**
   * Write the blockers' records, release the lease, then schedule the wake. Scheduling after the
   * release matters: a wake delivered while this invocation still held the lease would find the
   * run busy and be dropped. A crash between release and schedule leaves a suspended run whose
   * `wakeAt` has passed, which the watchdog wakes (DESIGN.md's "never stuck silently").
   *
   * Signals close the race from both sides: a deliverer writes its signal, then reads the waits;
   * this invocation writes the wait, then reads the signals — once before the release (so the
   * run is marked due at once) and once after it (a deliverer's wake may have found us busy).
   */
  private async suspend(runId: string, token: number, blockers: Blocker[], execution: Execution): Promise<InvocationResult> {
    const { store, clock, wakes } = this.o;
    const timed = blockers.filter((b): b is Blocker & { wakeAt: number } => b.wakeAt !== undefined);
    const first = timed.reduce<(Blocker & { wakeAt: number }) | undefined>((a, b) => (a === undefined || b.wakeAt < a.wakeAt ? b : a), undefined);
    await execution.persistBlockers();

    const waits = blockers.filter((b) => b.signal !== undefined);
    const signalled = waits.length > 0 && (await this.signalArrivedMeanwhile(runId, waits));
    const wakeAt = signalled ? clock.now() : first?.wakeAt;
    const waitingFor = (first ?? blockers[0])?.waitingFor ?? "unknown";
    const ok = await store.releaseLease(runId, token, { now: clock.now(), ...(wakeAt === undefined ? {} : { wakeAt }), waitingFor });
    if (!ok) return { status: "lost-lease" };

    if (signalled || (waits.length > 0 && (await this.signalArrivedMeanwhile(runId, waits)))) {
      await wakes.schedule({ runId, at: clock.now(), reason: "signal", key: "signal" });
      return { status: "suspended", wakeAt: clock.now(), waitingFor };
    }
    if (first) await wakes.schedule({ runId, at: first.wakeAt, reason: first.reason, key: first.key });
    return { status: "suspended", wakeAt, waitingFor };
  }

  /** The second half of the delivery handshake: deliverers write the signal, then read the waits. */
  private async signalArrivedMeanwhile(runId: string, waits: Blocker[]): Promise<boolean> {
    const fresh = await this.o.store.loadJournal(runId);
    if (!fresh) return false;
    const view = JournalView.parse(runId, fresh.records);
    return waits.some((w) => view.resolution(w.stepId) !== undefined || view.bufferedSignals(w.signal ?? "", w.stepId).length > 0);
  }
}
