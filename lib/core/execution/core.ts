/**
 * The state every step of one execution shares, and the machinery over it: how records are
 * written (stamped, write-once, fenced), how the execution blocks, and how it decides it has
 * ended — completed, failed, suspended, continued, cancelled or aborted. The step kinds are
 * modules of their own (run-step.ts, waits.ts, fan-out.ts, …) that work on this core through a
 * {@link Scope}; execution.ts composes them into the step API.
 */
import { DeliveryOrder, scopeOf } from "../delivery-order.ts";
import { LeaseLostError, NonDeterminismError } from "../errors.ts";
import { Cancellation } from "../cancellation.ts";
import { CHILD_SIGNAL } from "../children.ts";
import { DEFAULT_MAX_VALUE_BYTES } from "../json.ts";
import type { Later } from "../lazy.ts";
import type { Blocker, ExecutionOptions, Outcome, StepEvent } from "../execution-types.ts";
import type { JournalRecord, Unstamped } from "../records.ts";
import { JOURNAL_VERSION, keyOf } from "../records.ts";
import { type PayloadRef, systemTimers, type Timers } from "../../ports.ts";
import type { Scope } from "./scope.ts";
import { StepBodies } from "./bodies.ts";
import { decide, type Settled } from "./decide.ts";
import { never } from "./never.ts";
import { laterValue, offloadValue } from "./refs.ts";

export { isTooLargeForStore, resultOf } from "./results.ts";


export class ExecutionCore {
  readonly timers: Timers;
  readonly cancellation: Cancellation;
  /** Each scope's delivery order (its results come back in the order they were delivered live). */
  private readonly orders: DeliveryOrder[] = [];
  /** Step ids the code has reached in this invocation (replay and new), and the latest. */
  readonly visited = new Set<string>();
  lastReached: string | undefined;
  /** Signals a wait of this execution took from the buffer (another wait must not take them too). */
  readonly claimedSignals = new Set<string>();
  /** Wake keys made pointless by this execution (a wait resolved before its timeout). */
  readonly cancelledWakes: string[] = [];
  /** Step bodies and reads by reference in flight. */
  inflight = 0;
  /** User step functions still running (bodies.ts). */
  readonly bodies: StepBodies;
  done = false;
  fatal: Error | undefined;
  private readonly blockers: Blocker[] = [];
  /** Steps a replay-only check met that the journal does not have. */
  private readonly newSteps: Array<{ stepId: string; kind: string }> = [];
  private readonly sideEffects: Array<Promise<unknown>> = [];
  private settled: Settled | undefined;
  private checkScheduled = false;
  private resolveOutcome: (o: Outcome) => void = () => {};
  /** Marks taken by `step.now()` in any scope since the last write (they ride on the next record). */
  private readonly pendingMarks: Array<() => Record<string, number> | undefined> = [];

  constructor(readonly o: ExecutionOptions) {
    this.timers = o.timers ?? systemTimers;
    this.bodies = new StepBodies(this.timers);
    this.cancellation = new Cancellation(o.cancelReason);
  }

  /** A scope's delivery order, over the recorded deliveries of that scope's own steps. */
  orderFor(prefix: string): DeliveryOrder {
    const order = new DeliveryOrder(this.o.journal.deliveries().filter((d) => scopeOf(d.stepId) === prefix), () => this.checkQuiescent(), this.timers);
    this.orders.push(order);
    return order;
  }

  /** Where idempotency keys, randomness and child ids are derived from: this incarnation's journal id. */
  get journalId(): string {
    return this.o.journalId ?? this.o.runId;
  }

  /** Runs the workflow's code; resolves once the execution has ended. */
  start(body: () => Promise<unknown>): Promise<Outcome> {
    const outcome = new Promise<Outcome>((resolve) => {
      this.resolveOutcome = resolve;
    });
    Promise.resolve()
      .then(body)
      .then(
        (value) => this.settle({ ok: true, value }),
        (error) => this.settle({ ok: false, error }),
      );
    return outcome;
  }

  /** A scope's pending `now()` marks, collected into the next record written. */
  addMarkSource(take: () => Record<string, number> | undefined): void {
    this.pendingMarks.push(take);
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

  /**
   * Stamps and appends a record; pending `now()` marks ride along (no extra write).
   *
   * Losing a write-once append to another invocation (`race: "fence"`, the default) means that
   * invocation executes this run too: this one ends at once as `lost-lease` and starts nothing
   * more — adopting the winner's record and going on would run the next step's side effect twice.
   * Only a wait's resolution, which deliverers of signals race for by design, is adopted.
   */
  async write<R extends JournalRecord>(
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
  stamp(body: Unstamped<JournalRecord>): JournalRecord {
    // Not `{ ...body, v, at }`: on Node 20 (V8 11.3) properties added after a spread cost ~1 µs
    // per record, most of a step's own time; a copy and assignments cost ~70 ns on every version.
    const record = Object.assign({}, body) as JournalRecord;
    record.v = JOURNAL_VERSION;
    record.at = this.o.now();
    if (this.o.invocation !== undefined) record.inv = this.o.invocation;
    let marks: Record<string, number> | undefined;
    for (const take of this.pendingMarks) {
      const taken = take();
      if (taken) marks = { ...marks, ...taken };
    }
    if (marks) record.marks = marks;
    return record;
  }

  /**
   * Replay-only checks stop at a step the journal does not have (see `replayOnly`). Whether that
   * is the end of the history or a step inserted before recorded ones is decided once the code
   * has called everything it calls in that turn (`decide`), so parallel branches are not misread.
   */
  frontier<T>(scope: Scope, stepId: string, kind: string): Promise<T> {
    this.newSteps.push({ stepId, kind });
    return this.block(scope, { stepId, key: "frontier", reason: "continue", waitingFor: `frontier:${stepId}` });
  }

  emit(event: Omit<StepEvent, "runId">): void {
    const onStep = this.o.onStep;
    if (!onStep) return;
    // Field by field, not `{ runId, ...event }`: a spread costs ~0.2 µs on Node 20, on every step.
    const full: StepEvent = { runId: this.o.runId, stepId: event.stepId, kind: event.kind, outcome: event.outcome };
    if (event.attempt !== undefined) full.attempt = event.attempt;
    if (event.durationMs !== undefined) full.durationMs = event.durationMs;
    onStep(full);
  }

  /** False once the execution has ended, or the engine learns the lease is gone: no new step may start. */
  ownsLease(): boolean {
    if (this.done) return false;
    if (this.o.ownsLease === undefined || this.o.ownsLease()) return true;
    this.abort(new LeaseLostError(this.o.runId), true);
    return false;
  }

  /** True once this execution knows of a cancellation request. */
  get knowsCancel(): boolean {
    return this.cancellation.pending || this.cancellation.wasDelivered;
  }

  /**
   * Whether the run's cancellation stops what is about to start here: a pending one is delivered
   * at the first step or wait, and once delivered, only compensations run — a branch still
   * running forward (a `Promise.all` sibling, a `step.map` item) gets it at its next step too. A
   * compensation is never stopped (nor its body aborted): undoing must not be undone halfway.
   */
  cancelStops(compensation = false): boolean {
    return !compensation && (this.cancellation.pending || this.cancellation.wasDelivered);
  }

  /** An effect on another run the invocation must see through (a child's cancellation); its failure is handled here. */
  track(effect: Promise<unknown>): void {
    effect.catch(() => {});
    this.sideEffects.push(effect);
  }

  /** Waits for every effect on other runs; throws the first failure (the invocation is retried). */
  async sideEffectsSettled(): Promise<void> {
    const settled = await Promise.allSettled(this.sideEffects.splice(0));
    const failed = settled.find((r): r is PromiseRejectedResult => r.status === "rejected");
    if (failed) throw failed.reason;
  }

  /** Ends the execution at once, for a reason outside the workflow (journal fault, lost lease). */
  abort(error: unknown, leaseLost: boolean): void {
    if (this.done) return;
    this.done = true;
    this.resolveOutcome({ type: "aborted", error, leaseLost });
  }

  nondeterminism(stepId: string, expected: string, found: string): Promise<never> {
    this.fatal ??= new NonDeterminismError(stepId, expected, found);
    this.checkQuiescent();
    return never();
  }

  /**
   * The code waits here: the execution may suspend; the scopes it runs in hear of it (a map frees
   * the item's slot). A wait for a child does not free it: the child is the item's work in
   * flight, so `concurrency` bounds the children a map runs at once.
   */
  block<T>(scope: Scope, blocker: Blocker): Promise<T> {
    this.blockers.push(blocker);
    this.emit({ stepId: blocker.stepId, kind: blocker.reason === "sleep" ? "sleep" : blocker.reason === "timeout" ? "wait" : "run", outcome: "blocked" });
    if (blocker.signal !== CHILD_SIGNAL) scope.blocked();
    this.checkQuiescent();
    return never();
  }

  /** Suspend until the step's next attempt is due. */
  retryAt<T>(scope: Scope, stepId: string, at: number): Promise<T> {
    return this.block(scope, { stepId, wakeAt: at, key: `retry:${stepId}`, reason: "retry", waitingFor: `retry:${stepId}` });
  }

  /** Suspend and continue at once in a new invocation (out of time, or to read a fresh journal). */
  continueNow<T>(scope: Scope, stepId: string, waitingFor: string): Promise<T> {
    return this.block(scope, { stepId, wakeAt: this.o.now(), key: "continue", reason: "continue", waitingFor });
  }

  settle(result: Settled): void {
    this.settled ??= result;
    this.checkQuiescent();
  }

  /**
   * Ends the execution once nothing is in flight and the workflow has settled or is blocked.
   * The check runs after pending microtasks (a deferred callback), so code that continues after a
   * step resolves gets to start its next step first; it looks at everything again then.
   */
  checkQuiescent(): void {
    if (this.done || this.checkScheduled || !this.quiet()) return;
    this.checkScheduled = true;
    this.timers.defer(() => {
      this.checkScheduled = false;
      if (this.done || !this.quiet()) return;
      this.done = true;
      this.resolveOutcome(this.decide());
    });
  }

  private quiet(): boolean {
    if (this.inflight > 0) return false;
    // Results are being released in order (not held back until a step below a hole records).
    if (this.orders.some((o) => o.pending > 0 && !o.stalled && !o.held)) return false;
    return Boolean(this.settled || this.fatal || this.blockers.length > 0 || this.stalledOrder());
  }

  private stalledOrder(): DeliveryOrder | undefined {
    return this.orders.find((o) => o.stalled);
  }

  private decide(): Outcome {
    return decide({
      fatal: this.fatal,
      stalled: this.stalledOrder(),
      held: this.orders.some((o) => o.held),
      settled: this.settled,
      journal: this.o.journal,
      visited: this.visited,
      newSteps: this.newSteps,
      cancellation: this.cancellation,
      maxValueBytes: this.o.maxValueBytes ?? DEFAULT_MAX_VALUE_BYTES,
      byReference: this.o.payloads !== undefined,
      blockers: this.blockers,
    });
  }

  /** See refs.ts: a step result over the inline threshold stored by reference (`null`: the store failed, the invocation is aborted). */
  offload(value: unknown): Promise<PayloadRef | undefined | null> {
    return offloadValue(this, value);
  }

  /** See refs.ts: a recorded value by reference, read when the code awaits it. */
  later<T>(ref: PayloadRef): Later<T> {
    return laterValue<T>(this, ref);
  }
}
