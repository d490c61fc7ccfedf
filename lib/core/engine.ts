/**
 * One invocation of a run (DESIGN.md, "One invocation"): take the lease, load the journal,
 * execute the workflow against it, and persist how it ended. Transports (the local timer loop,
 * the SQS batch, the test runtime) all call {@link Engine.invoke} with a run id.
 */
import type { Blocker } from "./execution.ts";
import { Execution } from "./execution.ts";
import { serializeError } from "./error-codec.ts";
import { CancelledError, InvalidInputError, InvocationBudgetError, JournalFormatError, LeaseLostError, type SerializedError, ValueTooLargeError } from "./errors.ts";
import { JournalView } from "./journal-view.ts";
import { type JournalRecord, keyOf, keys, parseRecord } from "./records.ts";
import { type AcquireRequest, type AcquireResult, type AppendResult, type RunMeta, type SuspendUpdate, systemTimers, type Timers } from "../ports.ts";
import { isTooLargeForStore } from "./execution-state.ts";
import { jsonBytes } from "./json.ts";
import { isOwnGrant, isReleased, sameBody } from "./retried-writes.ts";
import { journalIdOf } from "./incarnation.ts";
import { checkJournalLimits, DEFAULT_JOURNAL_LIMITS } from "./journal-limits.ts";
import { childPort, continueAsNew, lastWordToParent, notifyParent, requestCancel } from "./engine-runs.ts";
import { leave } from "./flow-control.ts";
import { type Hold, startHeartbeat } from "./hold.ts";
import { admit, type AdmissionPorts, unhosted } from "./admission.ts";
import { zodIssues } from "./zod-issues.ts";
import { isPayloadFault, loadRef, metaRef, Payloads, toMetaRef } from "./payloads.ts";
import { validate } from "./validate.ts";

export type { EngineHooks, EngineOptions, InvocationResult, InvokeOptions, LogEntry } from "./engine-types.ts";
import type { EngineOptions, InvocationResult, InvokeOptions } from "./engine-types.ts";

/** After a fault, the run is due again this soon (the watchdog's backstop if no wake comes). */
const RETRY_AFTER_FAULT_MS = 5_000;

let engines = 0;

export class Engine {
  private readonly ttl: number;
  private invocationSeq = 0;
  private readonly payloads: Payloads | undefined;
  private readonly timers: Timers;
  /** Tells apart engines given the same owner name in one process (tests do), deterministically. */
  private readonly instance = (++engines).toString(36);

  constructor(private readonly o: EngineOptions) {
    this.ttl = o.leaseTtlMs ?? 30_000;
    this.timers = o.timers ?? systemTimers;
    this.payloads = o.payloads ? new Payloads(o.payloads) : undefined;
  }

  async invoke(runId: string, options: InvokeOptions = {}): Promise<InvocationResult> {
    const around = this.o.hooks?.invocation;
    return around ? around(runId, options, () => this.invokeNow(runId, options)) : this.invokeNow(runId, options);
  }

  private async invokeNow(runId: string, options: InvokeOptions): Promise<InvocationResult> {
    const { store, clock } = this.o;
    // Unique per invocation, so a retried grant can recognise itself (and nothing else) as its own.
    const owner = `${this.o.owner}:${this.instance}.${(++this.invocationSeq).toString(36)}`;
    let acquired = await this.acquire(runId, { owner, now: clock.now(), ttlMs: this.ttl });
    if (!acquired.acquired && acquired.reason === "held" && acquired.run?.lease && options.mayBreak?.(acquired.run.lease)) {
      acquired = await this.acquire(runId, { owner, now: clock.now(), ttlMs: this.ttl, ifToken: acquired.run.lease.token });
    }
    if (!acquired.acquired) return { status: acquired.reason === "held" ? "busy" : acquired.reason };
    const hold: Hold = { token: acquired.lease.token, expiresAt: acquired.lease.expiresAt, lost: false, abandoned: false, counts: { executed: 0, replayed: 0, retries: 0 } };
    const started = clock.now();
    const heartbeat = startHeartbeat(store, clock, this.timers, this.ttl, runId, hold);
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
      heartbeat.stop();
      // The slot goes with the invocation, handed to the first queued run of its key.
      if (hold.slot && !hold.abandoned) await leave(this.o, hold.slot, runId).catch(() => {});
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
    if (!workflow) return unhosted(this.admissionPorts(runId, token), runId, journal.run.workflow, granted.waitingFor);
    const budget = this.o.maxInvocations ?? 10_000;
    if (granted.invocations > budget) {
      // Out of budget, perhaps because telling its parent kept failing: one last try, then end.
      const failed = { type: "failed" as const, error: serializeError(new InvocationBudgetError(runId, budget)) };
      await lastWordToParent(this.o, runId, failed);
      return this.finish(runId, token, failed);
    }

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

    // Flow control: a debounce period, a rate window, a concurrency slot (admission.ts).
    const incarnation = journal.run.incarnation ?? 1;
    const journalId = journalIdOf(runId, incarnation);
    // A whole-run deadline (`durable({ timeout })`) is a cancellation like any other, journaled
    // once; before admission, so that a run still queued at its deadline ends then.
    const runDeadline = workflow.timeoutMs === undefined ? undefined : journal.run.createdAt + workflow.timeoutMs;
    let cancelReason = view.cancel()?.reason;
    if (cancelReason === undefined && runDeadline !== undefined && clock.now() >= runDeadline) {
      cancelReason = await requestCancel(this.o, journalId, `the run passed its timeout of ${workflow.timeoutMs} ms`);
    }
    const admission = await admit(this.admissionPorts(runId, token), workflow, { runId, journalId, createdAt: journal.run.createdAt, input: input.data, firstExecution: view.stepIds().length === 0, leaseTtlMs: this.ttl, leaseExpiresAt: hold.expiresAt, cancelReason });
    // Ended before it ran (superseded, or cancelled while queued): a child's parent hears of it first.
    const parent = view.parent();
    if (admission.type === "finish" && parent) await notifyParent(this.o, parent, runId, admission.outcome);
    if (admission.type === "finish") return this.finish(runId, token, admission.outcome);
    if (admission.type === "wait") return admission.result;
    if (admission.slot) hold.slot = admission.slot;
    const limit = checkJournalLimits({ ...DEFAULT_JOURNAL_LIMITS, ...this.o.journalLimits }, runId, journal.records, this.o.log);
    if (limit) return this.finish(runId, token, { type: "failed", error: serializeError(limit) });
    const execution = new Execution({
      runId,
      journalId,
      workflow,
      input: input.data,
      journal: view,
      now: () => clock.now(),
      timers: this.timers,
      append: (record) => this.append(runId, journalId, record),
      ...(cancelReason === undefined ? {} : { cancelReason }),
      children: childPort(this.o, incarnation),
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
    let cancelTimer = () => {};
    const overdue = new Promise<"overdue">((resolve) => {
      cancelTimer = this.timers.after(Math.max(0, deadline - clock.now()), () => resolve("overdue"));
    });
    const outcome = await Promise.race([ran, overdue]).finally(() => cancelTimer());
    if (outcome === "overdue") return this.abandon(runId, hold, execution);
    for (const key of execution.cancelledWakes) await this.o.wakes.cancel(runId, key).catch(() => {});
    // A child's cancellation must be written before this invocation ends; a failed one fails it (retried).
    for (const effect of execution.sideEffects.splice(0)) await effect;
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
    if (outcome.type === "continued") return continueAsNew(this.o, runId, token, incarnation, view, outcome.input);
    // A child's end goes to its parent first: if finishing fails, the next invocation ends the
    // same way and delivers the same outcome again (same signal id: one signal).
    if (parent && (outcome.type === "completed" || outcome.type === "failed" || outcome.type === "cancelled")) await notifyParent(this.o, parent, runId, outcome);
    // The run's own deadline wake is pointless once it ends.
    if (runDeadline !== undefined && outcome.type !== "suspended") await this.o.wakes.cancel(runId, "deadline").catch(() => {});
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

  /** What admission needs: the ports, and the release of this invocation's lease. */
  private admissionPorts(runId: string, token: number): AdmissionPorts {
    return { ...this.o, release: (update) => this.release(runId, token, update) };
  }

  private async append(runId: string, journalId: string, record: JournalRecord): Promise<{ record: JournalRecord; won: boolean }> {
    const key = keyOf(record);
    let res: AppendResult;
    try {
      res = await this.o.store.appendRecord(journalId, { key, body: record });
    } catch (err) {
      // The answer may be lost while the write was applied: read the record back before giving up.
      const existing = await this.o.store.getRecord(journalId, key).catch(() => undefined);
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
