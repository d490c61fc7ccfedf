/**
 * One invocation of a run (DESIGN.md, "One invocation"): take the lease, load the journal,
 * execute the workflow against it, and persist how it ended. Transports (the local timer loop,
 * the SQS batch, the test runtime) all call {@link Engine.invoke} with a run id.
 */
import type { AttemptHook, Blocker, StepEvent } from "./execution.ts";
import { Execution } from "./execution.ts";
import type { AnyWorkflow } from "./definition.ts";
import { serializeError } from "./error-codec.ts";
import { CancelledError, InvalidInputError, InvocationBudgetError, JournalFormatError, LeaseLostError, RunConflictError, type SerializedError, UnknownWorkflowError, ValueTooLargeError } from "./errors.ts";
import { JournalView } from "./journal-view.ts";
import { JOURNAL_VERSION, type JournalRecord, keyOf, keys, type ParentRecord, parseRecord } from "./records.ts";
import { CHILD_SIGNAL, type ChildOutcome, type ChildPort } from "./children.ts";
import { TERMINAL_STATUSES } from "../ports.ts";
import type { AcquireRequest, AcquireResult, AppendResult, ApprovalLinks, Clock, JournalStore, Lease, RunMeta, StoredRecord, SuspendUpdate, WakeQueue } from "../ports.ts";
import { isTooLargeForStore } from "./execution-state.ts";
import { jsonBytes } from "./json.ts";
import { isOwnGrant, isReleased, sameBody } from "./retried-writes.ts";
import { journalIdOf } from "./incarnation.ts";
import { DEFAULT_JOURNAL_LIMITS, JournalLimitError, type JournalLimits } from "./journal-limits.ts";
import type { Registry } from "./registry.ts";
import { zodIssues } from "./zod-issues.ts";
import { isPayloadFault, loadRef, metaRef, type PayloadOptions, Payloads, toMetaRef } from "./payloads.ts";
import { validate } from "./validate.ts";

export type InvocationResult =
  | { status: "completed"; result: unknown }
  | { status: "failed"; error: SerializedError }
  | { status: "suspended"; wakeAt: number | undefined; waitingFor: string }
  /** Another invocation holds the lease; it will finish the work. */
  | { status: "busy" }
  | { status: "missing" }
  /** The run had already finished; nothing to do. */
  | { status: "finished" }
  /** The lease was lost mid-invocation (expired, taken, lost an append race, or the run was cancelled). */
  | { status: "lost-lease" }
  /**
   * The invocation passed its deadline with work still in flight (a step body that does not
   * return, a Lambda about to time out): it gave up the run, which is woken again once its lease
   * lapses, so one stuck run never holds a worker or a batch.
   */
  | { status: "abandoned"; wakeAt: number }
  /** Cancelled (`client.cancel`, or the run's timeout), after the workflow's compensations. */
  | { status: "cancelled"; reason: string }
  /** `step.continueAsNew`: the run starts afresh as this incarnation, woken at once. */
  | { status: "continued"; incarnation: number }
  /** The run's workflow is not hosted by this deployment: it waits (backing off) for one that does. */
  | { status: "unhosted"; workflow: string; wakeAt: number };

/** A structured log line. */
export type LogEntry = Record<string, unknown> & { event: string; runId: string };

/**
 * What the host wraps around the engine's work (tracing). Both are optional; each must call
 * `body` once and return what it returns.
 */
export interface EngineHooks {
  /** Around one invocation of a run, from taking the lease to its outcome. */
  invocation?: <T>(runId: string, options: InvokeOptions, body: () => Promise<T>) => Promise<T>;
  /** Around one attempt of a step body. */
  attempt?: AttemptHook;
}

export interface EngineOptions {
  store: JournalStore;
  wakes: WakeQueue;
  clock: Clock;
  workflows: Registry;
  /** Identifies this process in leases; each invocation adds a suffix of its own. */
  owner: string;
  /** Lease length; renewed at a third of it while the invocation runs. Default 30 s. */
  leaseTtlMs?: number;
  /** Invocations one run may take before it fails (a guard against runaway self-wakes). Default 10,000. */
  maxInvocations?: number;
  /** Longest one invocation may hold a run before it gives it up (`abandoned`). Default 15 minutes. */
  maxInvocationMs?: number;
  /** Largest step result, as JSON bytes, the journal takes. Default 256 KiB. */
  maxValueBytes?: number;
  /** Mints approval links for `waitForSignal({ notify })`. */
  links?: ApprovalLinks;
  /**
   * Values over `inlineBytes` go to this store by reference, up to `maxBytes` (which then replaces
   * `maxValueBytes`). Give the client the same options.
   */
  payloads?: PayloadOptions;
  /**
   * How long one incarnation's journal may grow: past `warn*` a warning is logged; past `max*`
   * the run fails with `JournalLimitError` (end batches of work with `step.continueAsNew`).
   * Defaults: warn at 5,000 records or 4 MiB, fail past 50,000 records or 32 MiB.
   */
  journalLimits?: Partial<JournalLimits>;
  /**
   * Structured lines: `invocation` (with the run's counts: steps executed and replayed,
   * retries, invocations used of the budget, and the run's duration once it ends), `step` (new
   * steps only), `log` (`step.log`, once), `abandoned`, `unhosted`.
   */
  log?: (entry: LogEntry) => void;
  hooks?: EngineHooks;
}

export interface InvokeOptions {
  /** Checkpoint instead of starting another step (e.g. Lambda time running out). */
  shouldYield?: () => boolean;
  /** Give the run up at this time (epoch ms, the engine's clock) if it has not ended by then. */
  deadline?: number;
  /** Decides whether a held lease may be taken over (e.g. its local owner process is dead). */
  mayBreak?: (lease: Lease) => boolean;
  onStep?: (event: StepEvent) => void;
  /** W3C `traceparent` of what caused this invocation (a wake's), for the invocation hook. */
  traceparent?: string;
}

/** After a fault, the run is due again this soon (the watchdog's backstop if no wake comes). */
const RETRY_AFTER_FAULT_MS = 5_000;
/** Runs of a workflow no deploy here hosts are retried after 10 s, 40 s, 160 s, … up to an hour. */
const UNHOSTED_FIRST_MS = 10_000;
const UNHOSTED_MAX_MS = 3_600_000;
const UNHOSTED = /^workflow-not-hosted:(?:.*):(\d+)$/;

/** This invocation's hold on the run, as the engine knows it. */
interface Hold {
  token: number;
  /** Lease expiry by this process's clock: the grant's, then each successful renewal's. */
  expiresAt: number;
  lost: boolean;
  abandoned: boolean;
  /** Ends the execution at once when a renewal is refused. */
  onLost?: () => void;
  /** Looks for a cancellation requested while running (each heartbeat). */
  checkCancel?: () => void;
  /** What this invocation did, for its `invocation` line. */
  counts: { executed: number; replayed: number; retries: number };
}

export class Engine {
  private readonly ttl: number;
  private invocationSeq = 0;
  private readonly payloads: Payloads | undefined;

  constructor(private readonly o: EngineOptions) {
    this.ttl = o.leaseTtlMs ?? 30_000;
    this.payloads = o.payloads ? new Payloads(o.payloads) : undefined;
  }

  async invoke(runId: string, options: InvokeOptions = {}): Promise<InvocationResult> {
    const around = this.o.hooks?.invocation;
    return around ? around(runId, options, () => this.invokeNow(runId, options)) : this.invokeNow(runId, options);
  }

  private async invokeNow(runId: string, options: InvokeOptions): Promise<InvocationResult> {
    const { store, clock } = this.o;
    // Unique per invocation, so a retried grant can recognise itself (and nothing else) as its own.
    const owner = `${this.o.owner}:${(++this.invocationSeq).toString(36)}${Math.random().toString(36).slice(2, 6)}`;
    let acquired = await this.acquire(runId, { owner, now: clock.now(), ttlMs: this.ttl });
    if (!acquired.acquired && acquired.reason === "held" && acquired.run?.lease && options.mayBreak?.(acquired.run.lease)) {
      acquired = await this.acquire(runId, { owner, now: clock.now(), ttlMs: this.ttl, ifToken: acquired.run.lease.token });
    }
    if (!acquired.acquired) return { status: acquired.reason === "held" ? "busy" : acquired.reason };
    const hold: Hold = { token: acquired.lease.token, expiresAt: acquired.lease.expiresAt, lost: false, abandoned: false, counts: { executed: 0, replayed: 0, retries: 0 } };
    const started = clock.now();
    const heartbeat = setInterval(() => {
      if (hold.abandoned) return;
      const now = clock.now();
      store.renewLease(runId, hold.token, now, this.ttl).then(
        (renewed) => {
          if (renewed) {
            hold.expiresAt = Math.max(hold.expiresAt, now + this.ttl);
            hold.checkCancel?.();
          } else {
            // Taken over or cancelled: start nothing new, and end now rather than after the
            // bodies still in flight (a worker must not sit on wakes for a run it lost).
            hold.lost = true;
            hold.onLost?.();
          }
        },
        () => {},
      );
    }, Math.max(10, Math.floor(this.ttl / 3)));
    heartbeat.unref();
    const deadline = options.deadline ?? started + (this.o.maxInvocationMs ?? 15 * 60_000);
    try {
      const result = await this.execute(runId, hold, acquired.run, options, deadline);
      const run = acquired.run;
      const ended = result.status === "completed" || result.status === "failed";
      this.o.log?.({
        event: "invocation",
        runId,
        workflow: run.workflow,
        token: hold.token,
        outcome: result.status,
        durationMs: clock.now() - started,
        ...hold.counts,
        invocations: run.invocations,
        maxInvocations: this.o.maxInvocations ?? 10_000,
        ...(ended ? { runDurationMs: clock.now() - run.createdAt } : {}),
        ...(result.status === "failed" ? { errorName: result.error.name } : {}),
      });
      return result;
    } catch (err) {
      // A fault (the store, the wake queue): free the run for a retry soon, so a redelivered wake
      // does not find it "busy" until the lease expires. Best effort.
      if (!hold.lost && !hold.abandoned) await store.releaseLease(runId, hold.token, { now: clock.now(), wakeAt: clock.now() + RETRY_AFTER_FAULT_MS, waitingFor: "retry" }).catch(() => false);
      throw err;
    } finally {
      clearInterval(heartbeat);
    }
  }

  /** A grant whose answer was lost (thrown) is recognised by reading the run: the lease is ours. */
  private async acquire(runId: string, req: AcquireRequest): Promise<AcquireResult> {
    try {
      return await this.o.store.acquireLease(runId, req);
    } catch (err) {
      const run = await this.o.store.getRun(runId).catch(() => undefined);
      if (run?.lease && isOwnGrant(run, req.owner)) return { acquired: true, lease: run.lease, run };
      throw err;
    }
  }

  private async execute(runId: string, hold: Hold, granted: RunMeta, options: InvokeOptions, deadline: number): Promise<InvocationResult> {
    const { store, clock } = this.o;
    const token = hold.token;
    const journal = await store.loadJournal(runId);
    if (!journal) return { status: "missing" };
    const workflow = this.o.workflows.get(journal.run.workflow);
    // Another deploy may host it: wait for one, backing off, and say why in `waitingFor`.
    if (!workflow) return this.unhosted(runId, token, journal.run.workflow, granted.waitingFor);
    const budget = this.o.maxInvocations ?? 10_000;
    if (granted.invocations > budget) return this.finish(runId, token, { type: "failed", error: serializeError(new InvocationBudgetError(runId, budget)) });

    let view: JournalView;
    try {
      view = JournalView.parse(runId, journal.records);
    } catch (err) {
      if (err instanceof JournalFormatError) return this.finish(runId, token, { type: "failed", error: serializeError(err) });
      throw err;
    }
    let recordedInput = journal.run.input;
    const inputRef = metaRef(recordedInput);
    if (inputRef) {
      try {
        recordedInput = await loadRef(this.payloads, inputRef);
      } catch (err) {
        if (isPayloadFault(err)) return this.finish(runId, token, { type: "failed", error: serializeError(err) });
        throw err;
      }
    }
    const input = validate(workflow.input, recordedInput);
    if (!input.success) {
      const err = new InvalidInputError(`run "${runId}": its recorded input no longer fits the workflow's schema`, zodIssues(input.error));
      return this.finish(runId, token, { type: "failed", error: serializeError(err) });
    }

    const incarnation = journal.run.incarnation ?? 1;
    const journalId = journalIdOf(runId, incarnation);
    const limit = this.journalLimit(runId, journal.records);
    if (limit) return this.finish(runId, token, { type: "failed", error: serializeError(limit) });
    // A whole-run deadline (`durable({ timeout })`) is a cancellation like any other, journaled once.
    const runDeadline = workflow.timeoutMs === undefined ? undefined : journal.run.createdAt + workflow.timeoutMs;
    let cancelReason = view.cancel()?.reason;
    if (cancelReason === undefined && runDeadline !== undefined && clock.now() >= runDeadline) {
      cancelReason = await this.requestCancel(journalId, `the run passed its timeout of ${workflow.timeoutMs} ms`);
    }
    const execution = new Execution({
      runId,
      journalId,
      workflow,
      input: input.data,
      journal: view,
      now: () => clock.now(),
      append: (record) => this.append(runId, journalId, record),
      ...(cancelReason === undefined ? {} : { cancelReason }),
      children: this.childPort(incarnation),
      // Owned while no renewal was refused, the deadline has not passed, and the lease has not
      // expired by this process's own clock (a process frozen past its lease starts nothing).
      ownsLease: () => !hold.lost && !hold.abandoned && clock.now() < hold.expiresAt,
      invocation: granted.invocations,
      ...(this.payloads ? { payloads: this.payloads, maxValueBytes: this.payloads.maxBytes } : this.o.maxValueBytes === undefined ? {} : { maxValueBytes: this.o.maxValueBytes }),
      ...(options.shouldYield ? { shouldYield: options.shouldYield } : {}),
      ...(this.o.links ? { links: this.o.links } : {}),
      runCreatedAt: journal.run.createdAt,
      onStep: (event) => {
        options.onStep?.(event);
        if (event.outcome === "replayed") hold.counts.replayed++;
        else if (event.outcome === "retrying") hold.counts.retries++;
        else if (event.kind === "run" && (event.outcome === "completed" || event.outcome === "failed")) hold.counts.executed++;
        if (event.outcome !== "replayed") this.o.log?.({ ...event, event: "step" });
      },
      onLog: ({ level, message, stepId, attributes }) => this.o.log?.({ ...attributes, event: "log", level, message, runId, ...(stepId === undefined ? {} : { stepId }) }),
      ...(this.o.hooks?.attempt ? { aroundAttempt: this.o.hooks.attempt } : {}),
    });
    hold.onLost = () => execution.stop(new LeaseLostError(runId, "a lease renewal was refused: another invocation owns the run, or it was cancelled"));
    if (cancelReason === undefined) {
      hold.checkCancel = () => {
        store.getRecord(journalId, keys.cancel()).then((r) => {
          const reason = (r?.body as { reason?: unknown } | undefined)?.reason;
          if (typeof reason === "string") {
            hold.checkCancel = undefined;
            execution.requestCancel(reason);
          }
        }, () => {});
      };
    }
    const ran = execution.run();
    let timer: NodeJS.Timeout | undefined;
    const overdue = new Promise<"overdue">((resolve) => {
      timer = setTimeout(() => resolve("overdue"), Math.max(0, deadline - clock.now()));
      timer.unref?.();
    });
    const outcome = await Promise.race([ran, overdue]).finally(() => clearTimeout(timer));
    if (outcome === "overdue") return this.abandon(runId, hold, execution);
    for (const key of execution.cancelledWakes) await this.o.wakes.cancel(runId, key).catch(() => {});
    if (outcome.type === "aborted") {
      // A value by reference that is gone or altered: no retry can mend it, the run fails.
      if (isPayloadFault(outcome.error)) return this.finish(runId, token, { type: "failed", error: serializeError(outcome.error) });
      if (!outcome.leaseLost) throw outcome.error;
      // Lost an append race, or outlived the lease by our own clock (no renewal was refused):
      // free the run if the lease is still ours and have it continue at once, so the next
      // invocation replays what the journal now says instead of waiting for the lease to lapse.
      if (!hold.lost) {
        hold.lost = true;
        await this.release(runId, token, { now: clock.now(), wakeAt: clock.now(), waitingFor: "continue" }).catch(() => false);
        await this.o.wakes.schedule({ runId, at: clock.now(), reason: "continue", key: "continue" });
      }
      return { status: "lost-lease" };
    }
    if (outcome.type === "continued") return this.continueAsNew(runId, token, incarnation, view, outcome.input);
    // A child's end goes to its parent first: if finishing fails, the next invocation ends the
    // same way and delivers the same outcome again (same signal id: one signal).
    const parent = view.parent();
    if (parent && (outcome.type === "completed" || outcome.type === "failed" || outcome.type === "cancelled")) await this.notifyParent(parent, runId, outcome);
    if (outcome.type === "cancelled") return this.finish(runId, token, outcome);
    if (outcome.type === "completed" && this.payloads) {
      // A large run result goes by reference too (the meta item holds the input beside it).
      const ref = await this.payloads.offload(runId, journal.run.createdAt, outcome.result);
      if (ref) return this.finish(runId, token, outcome, toMetaRef(ref));
    }
    if (outcome.type !== "suspended") return this.finish(runId, token, outcome);
    return this.suspend(runId, token, outcome.blockers, execution, journalId, cancelReason === undefined ? runDeadline : undefined);
  }

  /**
   * Past the deadline with work in flight: start nothing more, stop renewing, and have the run
   * woken once the lease lapses. The lease is not released early: a step body still running here
   * must not run concurrently in another invocation before it times out.
   */
  private async abandon(runId: string, hold: Hold, execution: Execution): Promise<InvocationResult> {
    hold.abandoned = true;
    execution.stop(new LeaseLostError(runId, "the invocation passed its deadline"));
    const wakeAt = hold.expiresAt;
    this.o.log?.({ event: "abandoned", runId, token: hold.token, wakeAt });
    await this.o.wakes.schedule({ runId, at: wakeAt, reason: "continue", key: "abandoned" });
    return { status: "abandoned", wakeAt };
  }

  private async unhosted(runId: string, token: number, name: string, previous: string | undefined): Promise<InvocationResult> {
    const { clock, store } = this.o;
    const attempt = Number(UNHOSTED.exec(previous ?? "")?.[1] ?? 0) + 1;
    const wakeAt = clock.now() + Math.min(UNHOSTED_MAX_MS, UNHOSTED_FIRST_MS * 4 ** (attempt - 1));
    this.o.log?.({ event: "unhosted", runId, workflow: name, attempt, wakeAt });
    const ok = await store.releaseLease(runId, token, { now: clock.now(), wakeAt, waitingFor: `workflow-not-hosted:${name}:${attempt}` });
    if (!ok) return { status: "lost-lease" };
    // No wake is sent: the watchdog finds the run when `wakeAt` passes (and so does a deploy's).
    return { status: "unhosted", workflow: name, wakeAt };
  }

  /**
   * The next incarnation: signals nobody consumed move to its journal first (same bodies, so a
   * retry after a crash rewrites nothing), then one conditional write switches the run over, and
   * a start wake runs it. A crash before the switch leaves this incarnation to be replayed, which
   * ends here again.
   */
  private async continueAsNew(runId: string, token: number, incarnation: number, view: JournalView, input: unknown): Promise<InvocationResult> {
    const { store, clock } = this.o;
    const next = incarnation + 1;
    for (const signal of view.unconsumedSignals()) await store.appendRecord(journalIdOf(runId, next), { key: keyOf(signal), body: signal });
    const parent = view.parent();
    if (parent) await store.appendRecord(journalIdOf(runId, next), { key: keyOf(parent), body: parent });
    const ok = await store.continueRun(runId, token, { now: clock.now(), input, incarnation: next });
    if (!ok) return { status: "lost-lease" };
    this.o.log?.({ event: "continued", runId, incarnation: next });
    await this.o.wakes.schedule({ runId, at: clock.now(), reason: "start", key: "start" });
    return { status: "continued", incarnation: next };
  }

  /** What executions use to start and cancel children (children.ts), from a parent in `incarnation`. */
  private childPort(incarnation: number): ChildPort {
    const { store, clock, wakes } = this.o;
    return {
      start: async ({ workflow, runId, input, parent }) => {
        const def = this.o.workflows.get(workflow);
        if (!def) throw new UnknownWorkflowError(workflow);
        const checked = validate(def.input, input);
        if (!checked.success) throw new InvalidInputError(`invalid input for child workflow "${workflow}"`, zodIssues(checked.error));
        const now = clock.now();
        const { created, run } = await store.createRun({ runId, workflow, input, createdAt: now });
        if (!created && run.workflow !== workflow) throw new RunConflictError(runId);
        if (parent) {
          const body: ParentRecord = { v: JOURNAL_VERSION, at: now, type: "parent", runId: parent.runId, waitId: parent.waitId, ...(incarnation > 1 ? { incarnation } : {}) };
          const res = await store.appendRecord(runId, { key: keys.parent(), body });
          const existing = res.written ? body : (res.existing.body as ParentRecord);
          if (existing.runId !== parent.runId || existing.waitId !== parent.waitId) throw new RunConflictError(runId);
        }
        if (created || run.status === "pending") await wakes.schedule({ runId, at: now, reason: "start", key: "start" });
        // Started by an earlier attempt of this step and already over: deliver its end again.
        if (parent && TERMINAL_STATUSES.has(run.status)) {
          const end = run.status === "completed" ? { type: "completed" as const, result: run.result } : run.status === "cancelled" ? { type: "cancelled" as const, reason: "" } : { type: "failed" as const, error: run.error ?? { name: "Error", message: "failed" } };
          await this.notifyParent({ runId: parent.runId, waitId: parent.waitId, ...(incarnation > 1 ? { incarnation } : {}) }, runId, end, run.error);
        }
        return runId;
      },
      cancel: async (runId, reason) => {
        const run = await store.getRun(runId);
        if (!run || TERMINAL_STATUSES.has(run.status)) return;
        await this.requestCancel(journalIdOf(runId, run.incarnation), reason);
        await store.markDue(runId, clock.now());
        await wakes.schedule({ runId, at: clock.now(), reason: "cancel", key: "cancel" });
      },
    };
  }

  /** Delivers a child's end to its parent's wait as a signal, and wakes the parent. Idempotent (one signal id per child). */
  private async notifyParent(
    parent: { runId: string; waitId: string; incarnation?: number },
    childRunId: string,
    end: { type: "completed"; result: unknown } | { type: "failed"; error: SerializedError } | { type: "cancelled"; reason: string },
    error?: SerializedError,
  ): Promise<void> {
    const { store, clock, wakes } = this.o;
    const now = clock.now();
    const payload: ChildOutcome =
      end.type === "completed" ? { status: "completed", result: end.result } : end.type === "failed" ? { status: "failed", error: end.error } : { status: "cancelled", error: error ?? serializeError(new CancelledError(end.reason)) };
    const signalId = `child:${childRunId}`;
    const body = { v: JOURNAL_VERSION, at: now, type: "signal", signalId, name: CHILD_SIGNAL, payload, waitId: parent.waitId };
    await store.appendRecord(journalIdOf(parent.runId, parent.incarnation), { key: keys.signal(signalId), body });
    await store.markDue(parent.runId, now);
    await wakes.schedule({ runId: parent.runId, at: now, reason: "signal", key: "signal" });
  }

  /** Journals a cancellation request (write-once: an earlier one's reason stands). */
  private async requestCancel(journalId: string, reason: string): Promise<string> {
    const body = { v: JOURNAL_VERSION, at: this.o.clock.now(), type: "cancel", reason };
    const res = await this.o.store.appendRecord(journalId, { key: keys.cancel(), body });
    const existing = res.written ? undefined : (res.existing.body as { reason?: unknown }).reason;
    return typeof existing === "string" ? existing : reason;
  }

  /** A journal past the hard limit fails the run, naming the way out; past the warning, a log line. */
  private journalLimit(runId: string, records: readonly StoredRecord[]): JournalLimitError | undefined {
    const limits = { ...DEFAULT_JOURNAL_LIMITS, ...this.o.journalLimits };
    const bytes = records.length > limits.warnRecords / 10 ? jsonBytes(records) : 0; // small journals: not worth measuring
    if (records.length > limits.maxRecords || bytes > limits.maxBytes) return new JournalLimitError(runId, records.length, bytes, limits);
    if (records.length > limits.warnRecords || bytes > limits.warnBytes) {
      this.o.log?.({ event: "journal-large", runId, records: records.length, bytes, level: "warn", hint: "end each batch of work with step.continueAsNew(input)" });
    }
    return undefined;
  }

  private async append(runId: string, journalId: string, record: JournalRecord): Promise<{ record: JournalRecord; won: boolean }> {
    const key = keyOf(record);
    let res: AppendResult;
    try {
      res = await this.o.store.appendRecord(journalId, { key, body: record });
    } catch (err) {
      // The answer may be lost while the write was applied: read the record back before giving up.
      const existing = (await this.o.store.loadJournal(runId).catch(() => undefined))?.records.find((r) => r.key === key);
      if (!existing) throw err;
      res = sameBody(existing.body, record) ? { written: true } : { written: false, existing };
    }
    if (res.written) return { record, won: true };
    return { record: parseRecord(runId, key, res.existing.body), won: false };
  }

  private async finish(
    runId: string,
    token: number,
    outcome: { type: "completed"; result: unknown } | { type: "failed"; error: SerializedError } | { type: "cancelled"; reason: string; result?: unknown },
    /** What the meta record stores as the result, when not the result itself (a reference). */
    stored?: unknown,
  ): Promise<InvocationResult> {
    const now = this.o.clock.now();
    let ok: boolean;
    try {
      ok = await this.o.store.finishRun(
        runId,
        outcome.type === "completed"
          ? { now, status: "completed", result: stored ?? outcome.result, token }
          : outcome.type === "cancelled"
            ? { now, status: "cancelled", error: serializeError(new CancelledError(outcome.reason)), token, ...(outcome.result === undefined ? {} : { result: outcome.result }) }
            : { now, status: "failed", error: outcome.error, token },
      );
    } catch (err) {
      // The store's own limit (input and result share the run's item): fail the run, once.
      if (outcome.type !== "completed" || !isTooLargeForStore(err)) throw err;
      const tooLarge = new ValueTooLargeError("the run's result", jsonBytes(outcome.result), (err as { limitBytes?: number }).limitBytes ?? 0);
      return this.finish(runId, token, { type: "failed", error: serializeError(tooLarge) });
    }
    if (!ok) return { status: "lost-lease" };
    if (outcome.type === "cancelled") return { status: "cancelled", reason: outcome.reason };
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
  private async suspend(runId: string, token: number, blockers: Blocker[], execution: Execution, journalId: string, runDeadline: number | undefined): Promise<InvocationResult> {
    const { store, clock, wakes } = this.o;
    // The run's own deadline wakes it too (to cancel it), whatever it waits for.
    const all = runDeadline === undefined ? blockers : [...blockers, { stepId: "(run timeout)", wakeAt: runDeadline, key: "deadline", reason: "cancel" as const, waitingFor: "run timeout" }];
    const timed = all.filter((b): b is Blocker & { wakeAt: number } => b.wakeAt !== undefined);
    const first = timed.reduce<(Blocker & { wakeAt: number }) | undefined>((a, b) => (a === undefined || b.wakeAt < a.wakeAt ? b : a), undefined);
    if (!(await execution.persistBlockers())) return { status: "lost-lease" };

    const waits = blockers.filter((b) => b.signal !== undefined);
    const signalled = waits.length > 0 && (await this.signalArrivedMeanwhile(runId, waits));
    const wakeAt = signalled ? clock.now() : first?.wakeAt;
    const waitingFor = (first ?? blockers[0])?.waitingFor ?? "unknown";
    const ok = await this.release(runId, token, { now: clock.now(), ...(wakeAt === undefined ? {} : { wakeAt }), waitingFor });
    if (!ok) return { status: "lost-lease" };

    if (signalled || (waits.length > 0 && (await this.signalArrivedMeanwhile(runId, waits)))) {
      await wakes.schedule({ runId, at: clock.now(), reason: "signal", key: "signal" });
      return { status: "suspended", wakeAt: clock.now(), waitingFor };
    }
    // A cancellation requested while we held the lease found the run busy: wake it for that now.
    if (await store.getRecord(journalId, keys.cancel()).then((r) => r !== undefined && !execution.knowsCancel, () => false)) {
      await wakes.schedule({ runId, at: clock.now(), reason: "cancel", key: "cancel" });
      return { status: "suspended", wakeAt: clock.now(), waitingFor };
    }
    if (first) await wakes.schedule({ runId, at: first.wakeAt, reason: first.reason, key: first.key });
    return { status: "suspended", wakeAt, waitingFor };
  }

  /** A release whose answer was lost (thrown) counts as done when the run reads as released by our token. */
  private async release(runId: string, token: number, update: SuspendUpdate): Promise<boolean> {
    try {
      return await this.o.store.releaseLease(runId, token, update);
    } catch (err) {
      const run = await this.o.store.getRun(runId).catch(() => undefined);
      if (isReleased(run, token)) return true;
      throw err;
    }
  }

  /** The second half of the delivery handshake: deliverers write the signal, then read the waits. */
  private async signalArrivedMeanwhile(runId: string, waits: Blocker[]): Promise<boolean> {
    const fresh = await this.o.store.loadJournal(runId);
    if (!fresh) return false;
    const view = JournalView.parse(runId, fresh.records);
    return waits.some((w) => view.resolution(w.stepId) !== undefined || view.bufferedSignals(w.signal ?? "", w.stepId).length > 0);
  }
}
