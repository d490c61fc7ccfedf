/**
 * The machinery of an execution: its state, how records are written, how it blocks, and how it
 * decides that it has ended (completed, failed, suspended, or aborted). The step kinds built on
 * it are in execution.ts.
 */
import { DeliveryOrder } from "./delivery-order.ts";
import { type Step, assertName } from "./definition.ts";
import { serializeError } from "./error-codec.ts";
import { CancelledError, LeaseLostError, NonDeterminismError, StepFailedError, StepInterruptedError, ValueTooLargeError } from "./errors.ts";
import { Cancellation } from "./cancellation.ts";
import { assertJsonSafe, DEFAULT_MAX_VALUE_BYTES, jsonBytes } from "./json.ts";
import { ReplayValues } from "./replay-values.ts";
import type { Blocker, ExecutionOptions, Outcome, StepEvent } from "./execution-types.ts";
import type { JournalRecord, Unstamped } from "./records.ts";
import { JOURNAL_VERSION, keyOf } from "./records.ts";
import { systemTimers, type Timers } from "../ports.ts";

export const never = <T>(): Promise<T> => new Promise<T>(() => {});

export abstract class ExecutionState {
  protected readonly counters = new Map<string, number>();
  protected readonly visited = new Set<string>();
  protected readonly blockers: Blocker[] = [];
  protected readonly values: ReplayValues;
  protected readonly cancellation: Cancellation;
  protected readonly order: DeliveryOrder;
  protected inflight = 0;
  /** Steps a replay-only check met that the journal does not have. */
  protected readonly newSteps: Array<{ stepId: string; kind: string }> = [];
  protected checkScheduled = false;
  protected settled: { ok: true; value: unknown } | { ok: false; error: unknown } | { continued: unknown } | undefined;
  protected fatal: Error | undefined;
  protected done = false;
  protected resolveOutcome!: (o: Outcome) => void;
  /** Wake keys made pointless by this execution (a wait resolved before its timeout). */
  readonly cancelledWakes: string[] = [];
  /** Effects on other runs (a child's cancellation) the engine awaits before the invocation ends. */
  private readonly sideEffects: Array<Promise<unknown>> = [];

  protected readonly timers: Timers;

  constructor(protected readonly o: ExecutionOptions) {
    this.timers = o.timers ?? systemTimers;
    this.values = new ReplayValues(o.journalId ?? o.runId, o.journal, o.now);
    this.cancellation = new Cancellation(o.cancelReason);
    this.order = new DeliveryOrder(o.journal.deliveries(), () => this.checkQuiescent(), this.timers);
  }

  run(): Promise<Outcome> {
    const outcome = new Promise<Outcome>((resolve) => {
      this.resolveOutcome = resolve;
    });
    const step = this.stepApi();
    Promise.resolve()
      .then(() => this.o.workflow.fn(this.o.input, step))
      .then(
        (value) => this.settle({ ok: true, value }),
        (error) => this.settle({ ok: false, error }),
      );
    return outcome;
  }

  /**
   * Writes the records of blockers first met in this execution (at suspension, before the lease
   * is released). False when another invocation recorded one of them first: it owns the run.
   */
  async persistBlockers(): Promise<boolean> {
    for (const blocker of this.blockers) {
      if (!blocker.record) continue;
      const { won } = await this.o.append(this.stamp(blocker.record));
      if (!won) return false;
    }
    return true;
  }

  // ---- machinery ------------------------------------------------------------------------

  /**
   * Stamps and appends a record; pending `now()` marks ride along (no extra write).
   *
   * Losing a write-once append to another invocation (`race: "fence"`, the default) means that
   * invocation executes this run too: this one ends at once as `lost-lease` and starts nothing
   * more — adopting the winner's record and going on would run the next step's side effect twice.
   * Only a wait's resolution, which deliverers of signals race for by design, is adopted.
   */
  protected async write<R extends JournalRecord>(
    body: Unstamped<R>,
    race: "fence" | "adopt" = "fence",
    /** A store refusal this write can answer with another record (e.g. a too-large result becomes a failure). */
    instead?: (err: unknown) => Unstamped<R> | undefined,
  ): Promise<{ record: R; won: boolean }> {
    const record = this.stamp(body);
    let appended: { record: JournalRecord; won: boolean; cancel?: string | null | undefined };
    try {
      appended = await this.o.append(record);
    } catch (first) {
      const other = instead?.(first);
      try {
        if (other === undefined) throw first;
        appended = await this.o.append({ ...this.stamp(other), ...(record.marks ? { marks: record.marks } : {}) });
      } catch (err) {
        // The journal could not be written: user code must not see (or catch) this. The
        // invocation ends; the transport retries the wake and replay resumes from the journal.
        this.abort(err, false);
        return never();
      }
    }
    const { record: winner, won } = appended;
    // The journal holds a cancellation this execution did not know of: running bodies are
    // aborted, and the next step (or wait) gets it — not a heartbeat later.
    if (typeof appended.cancel === "string" && !this.knowsCancel) this.cancellation.request(appended.cancel);
    if (!won && race === "fence") {
      this.abort(new LeaseLostError(this.o.runId, `another invocation recorded "${keyOf(record)}" first`), true);
      return never();
    }
    return { record: winner as R, won };
  }

  /** A record as written: version, time, invocation, and pending `now()` marks. */
  private stamp(body: Unstamped<JournalRecord>): JournalRecord {
    const record = { ...body, v: JOURNAL_VERSION, at: this.o.now() } as JournalRecord;
    if (this.o.invocation !== undefined) record.inv = this.o.invocation;
    const marks = this.values.takeMarks();
    if (marks) record.marks = marks;
    return record;
  }

  /**
   * Replay-only checks stop at a step the journal does not have (see `replayOnly`). Whether that
   * is the end of the history or a step inserted before recorded ones is decided once the code
   * has called everything it calls in that turn (`decide`), so parallel branches are not misread.
   */
  protected frontier<T>(stepId: string, kind: string): Promise<T> {
    this.newSteps.push({ stepId, kind });
    return this.block({ stepId, key: "frontier", reason: "continue", waitingFor: `frontier:${stepId}` });
  }

  /** True when the journal holds steps this execution has not reached yet: it is replaying history. */
  protected replayingPastHere(): boolean {
    return this.o.journal.stepIds().some((id) => !this.visited.has(id));
  }

  protected nextId(name: string): string {
    assertName("step", name);
    const n = (this.counters.get(name) ?? 0) + 1;
    this.counters.set(name, n);
    return n === 1 ? name : `${name}#${n}`;
  }

  protected emit(event: Omit<StepEvent, "runId">): void {
    this.o.onStep?.({ runId: this.o.runId, ...event });
  }

  /** False once the execution has ended, or the engine learns the lease is gone: no new step may start. */
  protected ownsLease(): boolean {
    if (this.done) return false;
    if (this.o.ownsLease === undefined || this.o.ownsLease()) return true;
    this.abort(new LeaseLostError(this.o.runId), true);
    return false;
  }

  /** Step bodies (and reads by reference) still running: after an abort, they may outlive the execution. */
  get bodiesInFlight(): number {
    return this.inflight;
  }

  /** True once this execution knows of a cancellation request. */
  get knowsCancel(): boolean {
    return this.cancellation.pending || this.cancellation.wasDelivered;
  }

  /**
   * Whether the run's cancellation stops what is about to start here: a pending one is delivered
   * at the first step or wait, and once delivered, only compensations run — a branch still
   * running forward (a `Promise.all` sibling) gets it at its next step too. A compensation is
   * never stopped (nor its body aborted): undoing must not be undone halfway.
   */
  protected cancelStops(compensation = false): boolean {
    return !compensation && (this.cancellation.pending || this.cancellation.wasDelivered);
  }

  /** An effect on another run the invocation must see through (a child's cancellation); its failure is handled here. */
  protected track(effect: Promise<unknown>): void {
    effect.catch(() => {});
    this.sideEffects.push(effect);
  }

  /** Waits for every effect on other runs; throws the first failure (the invocation is retried). */
  async sideEffectsSettled(): Promise<void> {
    const settled = await Promise.allSettled(this.sideEffects.splice(0));
    const failed = settled.find((r): r is PromiseRejectedResult => r.status === "rejected");
    if (failed) throw failed.reason;
  }

  /** A cancellation noticed while running (the heartbeat read it): running step bodies are aborted. */
  requestCancel(reason: string): void {
    this.cancellation.request(reason);
  }

  /** Ends the execution from outside (the invocation's deadline passed): no new step starts. */
  stop(error: unknown): void {
    this.abort(error, true);
  }

  /** Ends the execution at once, for a reason outside the workflow (journal fault, lost lease). */
  protected abort(error: unknown, leaseLost: boolean): void {
    if (this.done) return;
    this.done = true;
    this.resolveOutcome({ type: "aborted", error, leaseLost });
  }

  protected nondeterminism(stepId: string, expected: string, found: string): Promise<never> {
    this.fatal ??= new NonDeterminismError(stepId, expected, found);
    this.checkQuiescent();
    return never();
  }

  protected block<T>(blocker: Blocker): Promise<T> {
    this.blockers.push(blocker);
    this.emit({ stepId: blocker.stepId, kind: blocker.reason === "sleep" ? "sleep" : blocker.reason === "timeout" ? "wait" : "run", outcome: "blocked" });
    this.checkQuiescent();
    return never();
  }

  /** Suspend until the step's next attempt is due. */
  protected retryAt<T>(stepId: string, at: number): Promise<T> {
    return this.block({ stepId, wakeAt: at, key: `retry:${stepId}`, reason: "retry", waitingFor: `retry:${stepId}` });
  }

  /** Suspend and continue at once in a new invocation (out of time, or to read a fresh journal). */
  protected continueNow<T>(stepId: string, waitingFor: string): Promise<T> {
    return this.block({ stepId, wakeAt: this.o.now(), key: "continue", reason: "continue", waitingFor });
  }

  protected settle(result: { ok: true; value: unknown } | { ok: false; error: unknown } | { continued: unknown }): void {
    this.settled ??= result;
    this.checkQuiescent();
  }

  /**
   * Ends the execution once nothing is in flight and the workflow has settled or is blocked.
   * The check runs after pending microtasks (setImmediate), so code that continues after a
   * step resolves gets to start its next step first.
   */
  protected checkQuiescent(): void {
    if (this.done || this.checkScheduled || this.inflight > 0) return;
    if (this.order.pending > 0 && !this.order.stalled) return; // results are being released in order
    if (!this.settled && !this.fatal && this.blockers.length === 0 && !this.order.stalled) return;
    this.checkScheduled = true;
    this.timers.defer(() => {
      this.checkScheduled = false;
      // Everything checked again: what looked like an end (a stall) may have moved on since.
      if (this.done || this.inflight > 0) return;
      if (this.order.pending > 0 && !this.order.stalled) return;
      if (!this.settled && !this.fatal && this.blockers.length === 0 && !this.order.stalled) return;
      this.done = true;
      this.resolveOutcome(this.decide());
    });
  }

  protected decide(): Outcome {
    if (this.fatal) return { type: "failed", error: serializeError(this.fatal), nondeterminism: true };
    if (this.order.stalled) {
      // Results wait for one the code never asked for: the code took another path than the journal.
      const missing = this.order.head ?? "(a step past the journal's end)";
      const err = new NonDeterminismError(missing, `step "${missing}" delivered before the steps after it`, "never reached it");
      return { type: "failed", error: serializeError(err), nondeterminism: true };
    }
    // The code's own diagnosis (a wrapper that checks what a replayed step was asked) is the precise one.
    if (this.settled && "ok" in this.settled && !this.settled.ok && this.settled.error instanceof NonDeterminismError) {
      return { type: "failed", error: serializeError(this.settled.error), nondeterminism: true };
    }
    const skipped = this.o.journal.stepIds().find((id) => !this.visited.has(id));
    if (skipped) {
      const record = this.o.journal.step(skipped);
      const inserted = this.newSteps[0];
      if (inserted) {
        const err = new NonDeterminismError(inserted.stepId, `a ${record?.kind ?? "?"} step "${skipped}" next`, `a new ${inserted.kind} step "${inserted.stepId}" instead (guard it with step.patched())`);
        return { type: "failed", error: serializeError(err), nondeterminism: true };
      }
      const err = new NonDeterminismError(skipped, `a ${record?.kind ?? "?"} step "${skipped}"`, "never reached it (renamed or removed?)");
      return { type: "failed", error: serializeError(err), nondeterminism: true };
    }
    if (this.settled && "continued" in this.settled) return { type: "continued", input: this.settled.continued };
    // Cancelled, and the workflow has ended (after its compensations): the run ends cancelled.
    if (this.settled && this.cancellation.wasDelivered) {
      return { type: "cancelled", reason: this.cancellation.reason, ...(this.settled.ok && this.settled.value !== undefined ? { result: this.settled.value } : {}) };
    }
    if (this.settled) {
      if (this.settled.ok) {
        try {
          assertJsonSafe(this.settled.value, "workflow result");
          const size = jsonBytes(this.settled.value);
          const limit = this.o.maxValueBytes ?? DEFAULT_MAX_VALUE_BYTES;
          if (size > limit) throw new ValueTooLargeError("the run's result", size, limit, this.o.payloads ? "payloads" : "journal");
        } catch (err) {
          return { type: "failed", error: serializeError(err) };
        }
        return { type: "completed", result: this.settled.value };
      }
      return { type: "failed", error: serializeError(this.settled.error) };
    }
    return { type: "suspended", blockers: [...this.blockers] };
  }

  /** The step API user code receives. */
  protected abstract stepApi(): Step;
}

/** A finished step's result, or its recorded failure thrown as `StepFailedError` (live and on replay alike). */
export function resultOf<T>(record: JournalRecord): T {
  if (record.type !== "step" || record.kind !== "run") throw new TypeError("not a run record");
  if (record.status === "ok") return record.result as T;
  if (record.error?.name === "StepInterruptedError") throw new StepInterruptedError(record.stepId, record.attempts);
  if (record.error?.name === "CancelledError") throw new CancelledError(String(record.error.fields?.reason ?? "cancelled"));
  throw new StepFailedError(record.stepId, record.attempts, record.error ?? { name: "Error", message: "unknown failure" });
}

/** A store's refusal of a record over its own size limit (DynamoDB's `RecordTooLargeError`). */
export function isTooLargeForStore(err: unknown): boolean {
  return typeof err === "object" && err !== null && (err as { name?: unknown }).name === "RecordTooLargeError";
}
