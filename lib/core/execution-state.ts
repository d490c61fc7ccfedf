/**
 * The machinery of an execution: its state, how records are written, how it blocks, and how it
 * decides that it has ended (completed, failed, suspended, or aborted). The step kinds built on
 * it are in execution.ts.
 */
import { DeliveryOrder } from "./delivery-order.ts";
import { type Step, assertName } from "./definition.ts";
import { serializeError } from "./error-codec.ts";
import { LeaseLostError, NonDeterminismError, StepFailedError } from "./errors.ts";
import { assertJsonSafe } from "./json.ts";
import { ReplayValues } from "./replay-values.ts";
import type { Blocker, ExecutionOptions, Outcome, StepEvent } from "./execution-types.ts";
import type { JournalRecord, Unstamped } from "./records.ts";
import { JOURNAL_VERSION } from "./records.ts";

export const never = <T>(): Promise<T> => new Promise<T>(() => {});

export abstract class ExecutionState {
  protected readonly counters = new Map<string, number>();
  protected readonly visited = new Set<string>();
  protected readonly blockers: Blocker[] = [];
  protected readonly values: ReplayValues;
  protected readonly deliveries: Map<number, string>;
  protected readonly order: DeliveryOrder;
  protected inflight = 0;
  protected checkScheduled = false;
  protected settled: { ok: true; value: unknown } | { ok: false; error: unknown } | undefined;
  protected fatal: Error | undefined;
  protected done = false;
  protected resolveOutcome!: (o: Outcome) => void;
  /** Wake keys made pointless by this execution (a wait resolved before its timeout). */
  readonly cancelledWakes: string[] = [];

  constructor(protected readonly o: ExecutionOptions) {
    this.values = new ReplayValues(o.runId, o.journal, o.now);
    this.deliveries = o.journal.deliveries();
    this.order = new DeliveryOrder([...this.deliveries.keys()], () => this.checkQuiescent());
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

  /** Writes the records of blockers first met in this execution (at suspension, before the lease is released). */
  async persistBlockers(): Promise<void> {
    for (const blocker of this.blockers) if (blocker.record) await this.write(blocker.record);
  }

  // ---- machinery ------------------------------------------------------------------------

  /** Stamps and appends a record; pending `now()` marks ride along (no extra write). */
  protected async write<R extends JournalRecord>(body: Unstamped<R>): Promise<{ record: R; won: boolean }> {
    const at = this.o.now();
    const record = { ...body, v: JOURNAL_VERSION, at } as JournalRecord;
    const marks = this.values.takeMarks();
    if (marks) record.marks = marks;
    let appended: { record: JournalRecord; won: boolean };
    try {
      appended = await this.o.append(record);
    } catch (err) {
      // The journal could not be written: user code must not see (or catch) this. The
      // invocation ends; the transport retries the wake and replay resumes from the journal.
      this.abort(err, false);
      return never();
    }
    const { record: winner, won } = appended;
    return { record: winner as R, won };
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

  /** False once the engine learns the lease is gone: no new step may start. */
  protected ownsLease(): boolean {
    if (this.o.ownsLease === undefined || this.o.ownsLease()) return true;
    this.abort(new LeaseLostError(this.o.runId), true);
    return false;
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

  protected settle(result: { ok: true; value: unknown } | { ok: false; error: unknown }): void {
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
    setImmediate(() => {
      this.checkScheduled = false;
      if (this.done || this.inflight > 0) return;
      if (this.order.pending > 0 && !this.order.stalled) return;
      this.done = true;
      this.resolveOutcome(this.decide());
    });
  }

  protected decide(): Outcome {
    if (this.fatal) return { type: "failed", error: serializeError(this.fatal), nondeterminism: true };
    if (this.order.stalled) {
      // Results wait for one the code never asked for: the code took another path than the journal.
      const head = this.order.head;
      const missing = head === undefined ? "?" : (this.deliveries.get(head) ?? "?");
      const err = new NonDeterminismError(missing, `step "${missing}" delivered before the steps after it`, "never reached it");
      return { type: "failed", error: serializeError(err), nondeterminism: true };
    }
    const skipped = this.o.journal.stepIds().find((id) => !this.visited.has(id));
    if (skipped) {
      const record = this.o.journal.step(skipped);
      const err = new NonDeterminismError(skipped, `a ${record?.kind ?? "?"} step "${skipped}"`, "never reached it (renamed or removed?)");
      return { type: "failed", error: serializeError(err), nondeterminism: true };
    }
    if (this.settled) {
      if (this.settled.ok) {
        try {
          assertJsonSafe(this.settled.value, "workflow result");
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
  throw new StepFailedError(record.stepId, record.attempts, record.error ?? { name: "Error", message: "unknown failure" });
}
