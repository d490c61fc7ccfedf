/**
 * One execution of a workflow's code against its journal: the replay state machine behind the
 * step API. It knows nothing of leases, stores or queues: it reads the parsed journal, appends
 * records through `append`, and ends in an {@link Outcome} the engine persists.
 *
 * Suspension is not an exception: a step that must wait returns a promise that never settles,
 * so user code cannot catch it. The execution ends when the workflow settles, or when nothing is
 * running and something is blocked, after in-flight steps have written their records.
 */
import { runAttempt } from "./attempt.ts";
import { DeliveryOrder } from "./delivery-order.ts";
import { type Step, type StepRunContext, type StepRunOptions, type WaitOptions, type WaitResult, assertName } from "./definition.ts";
import { parseDuration } from "./duration.ts";
import { serializeError } from "./error-codec.ts";
import { LeaseLostError, NonDeterminismError, StepFailedError, WorkflowDefinitionError } from "./errors.ts";
import { assertJsonSafe } from "./json.ts";
import { mulberry32, hash32, uuidFrom } from "./random.ts";
import type { Blocker, ExecutionOptions, Outcome, StepEvent } from "./execution-types.ts";
import type { AttemptRecord, JournalRecord, ResolutionRecord, RunStepRecord, StepRecord, Unstamped } from "./records.ts";
import { JOURNAL_VERSION } from "./records.ts";
import { nextRetryAt, resolveRetry } from "./retry.ts";

export type { Blocker, ExecutionOptions, Outcome, StepEvent } from "./execution-types.ts";

const never = <T>(): Promise<T> => new Promise<T>(() => {});

export class Execution {
  private readonly counters = new Map<string, number>();
  private readonly visited = new Set<string>();
  private readonly blockers: Blocker[] = [];
  private readonly claimedSignals = new Set<string>();
  private readonly pendingMarks: Record<string, number> = {};
  private readonly rng: () => number;
  private readonly deliveries: Map<number, string>;
  private readonly order: DeliveryOrder;
  private nowOrdinal = 0;
  private inflight = 0;
  private checkScheduled = false;
  private settled: { ok: true; value: unknown } | { ok: false; error: unknown } | undefined;
  private fatal: Error | undefined;
  private done = false;
  private resolveOutcome!: (o: Outcome) => void;
  /** Wake keys made pointless by this execution (a wait resolved before its timeout). */
  readonly cancelledWakes: string[] = [];

  constructor(private readonly o: ExecutionOptions) {
    this.rng = mulberry32(hash32(`random:${o.runId}`));
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

  private stepApi(): Step {
    return {
      runId: this.o.runId,
      run: (name, fn, options) => this.runStep(name, fn, options),
      sleep: (name, duration) => this.sleep(name, () => this.o.now() + parseDuration(duration)),
      sleepUntil: (name, until) => this.sleep(name, () => (typeof until === "number" ? until : until.getTime())),
      waitForSignal: (name, options) => this.wait(name, options),
      now: () => new Date(this.now()),
      random: () => this.rng(),
      uuid: () => uuidFrom(this.rng),
    } as Step;
  }

  // ---- step.run -------------------------------------------------------------------------

  private async runStep<T>(name: string, fn: (ctx: StepRunContext) => Promise<T> | T, options?: StepRunOptions): Promise<T> {
    const stepId = this.nextId(name);
    if (this.done) return never();
    return this.runStepWithId(stepId, fn, options);
  }

  /** `ordered: false` for steps whose result no code awaits in order (a wait's `:notify`). */
  private async runStepWithId<T>(stepId: string, fn: (ctx: StepRunContext) => Promise<T> | T, options?: StepRunOptions, ordered = true): Promise<T> {
    const recorded = this.o.journal.step(stepId);
    if (recorded) {
      if (recorded.kind !== "run") return this.nondeterminism(stepId, `a ${recorded.kind} step`, "a run step");
      this.visited.add(stepId);
      const turn = ordered ? this.order.turn(recorded.seq) : undefined;
      if (turn) await turn;
      this.emit({ stepId, kind: "run", outcome: "replayed", attempt: recorded.attempts });
      return this.fromRecord<T>(recorded);
    }
    const policy = resolveRetry(options?.retries, this.o.workflow.retry);
    const timeoutMs = options?.timeout === undefined ? undefined : parseDuration(options.timeout);
    const prior = this.o.journal.attempts(stepId);
    const last = prior.at(-1);
    if (last && last.retryAt > this.o.now()) {
      return this.block({ stepId, wakeAt: last.retryAt, key: `retry:${stepId}`, reason: "retry", waitingFor: `retry:${stepId}` });
    }
    if (this.o.shouldYield?.()) return this.block({ stepId, wakeAt: this.o.now(), key: "continue", reason: "continue", waitingFor: "continue" });

    this.inflight++;
    let running = true;
    const written = () => {
      // The record is written: the step no longer holds the execution open, even while its
      // result waits its turn to be delivered.
      if (!running) return;
      running = false;
      this.inflight--;
      this.checkQuiescent();
    };
    try {
      for (let attempt = prior.length + 1; ; attempt++) {
        if (!this.ownsLease()) return never();
        const startedAt = this.o.now();
        // Only the step's own failure (or a result that cannot be journaled) is the step failing;
        // a journal write that fails aborts the invocation instead (see `write`).
        let value: T;
        try {
          value = await runAttempt(`${this.o.runId}/${stepId}`, stepId, fn, attempt, timeoutMs);
          assertJsonSafe(value, `result of step "${stepId}"`);
        } catch (err) {
          const error = serializeError(err);
          const retryAt = nextRetryAt(policy, err, attempt, this.o.now(), `${this.o.runId}/${stepId}`);
          if (retryAt === undefined) {
            return await this.deliver<T>({ type: "step", kind: "run", stepId, status: "failed", error, attempts: attempt, startedAt }, written, "failed", ordered);
          }
          const { won } = await this.write<AttemptRecord>({ type: "attempt", stepId, attempt, error, retryAt, startedAt });
          this.emit({ stepId, kind: "run", outcome: "retrying", attempt, durationMs: this.o.now() - startedAt });
          if (!won) {
            // Another invocation recorded this attempt first: it owns the step now. Let the next
            // invocation replay whatever it recorded.
            return this.block({ stepId, wakeAt: this.o.now(), key: "continue", reason: "continue", waitingFor: `retry:${stepId}` });
          }
          if (retryAt > this.o.now()) {
            return this.block({ stepId, wakeAt: retryAt, key: `retry:${stepId}`, reason: "retry", waitingFor: `retry:${stepId}` });
          }
          continue;
        }
        return await this.deliver<T>({ type: "step", kind: "run", stepId, status: "ok", result: value, attempts: attempt, startedAt }, written, "completed", ordered);
      }
    } finally {
      written();
    }
  }

  /** Writes a finished step's record and hands its result over in delivery order. */
  private async deliver<T>(body: Omit<Unstamped<RunStepRecord>, "seq">, written: () => void, outcome: "completed" | "failed", ordered: boolean): Promise<T> {
    const seq = ordered ? this.order.take() : undefined;
    const { record } = await this.write<RunStepRecord>(seq === undefined ? body : { ...body, seq });
    written();
    const turn = this.order.turn(seq);
    if (turn) await turn;
    this.emit({ stepId: body.stepId, kind: "run", outcome, attempt: body.attempts, durationMs: this.o.now() - body.startedAt });
    return this.fromRecord<T>(record);
  }

  private fromRecord<T>(record: JournalRecord): T {
    if (record.type !== "step" || record.kind !== "run") throw new TypeError("not a run record");
    if (record.status === "ok") return record.result as T;
    throw new StepFailedError(record.stepId, record.attempts, record.error ?? { name: "Error", message: "unknown failure" });
  }

  // ---- step.sleep -----------------------------------------------------------------------

  private async sleep(name: string, wakeAtIfNew: () => number): Promise<void> {
    const stepId = this.nextId(name);
    if (this.done) return never();
    const recorded = this.o.journal.step(stepId);
    if (recorded && recorded.kind !== "sleep") return this.nondeterminism(stepId, `a ${recorded.kind} step`, "a sleep step");
    let wakeAt: number;
    if (recorded) {
      this.visited.add(stepId);
      wakeAt = recorded.wakeAt;
    } else {
      wakeAt = wakeAtIfNew();
      if (!Number.isFinite(wakeAt)) throw new WorkflowDefinitionError(`sleep "${stepId}": invalid wake time`);
    }
    if (this.o.now() >= wakeAt) {
      if (!recorded) await this.write({ type: "step", kind: "sleep", stepId, wakeAt });
      this.emit({ stepId, kind: "sleep", outcome: recorded ? "replayed" : "completed" });
      return;
    }
    const blocker: Blocker = { stepId, wakeAt, key: `sleep:${stepId}`, reason: "sleep", waitingFor: `sleep:${stepId}` };
    if (!recorded) blocker.record = { type: "step", kind: "sleep", stepId, wakeAt };
    return this.block(blocker);
  }

  // ---- step.waitForSignal ---------------------------------------------------------------

  private async wait(name: string, options: WaitOptions | undefined): Promise<WaitResult<unknown>> {
    const stepId = this.nextId(name);
    const timeoutMs = options?.timeout === undefined ? undefined : parseDuration(options.timeout);
    const schema = Object.hasOwn(this.o.workflow.signals, name) ? this.o.workflow.signals[name] : undefined;
    if (!schema) throw new WorkflowDefinitionError(`workflow "${this.o.workflow.name}" waits for signal "${name}" but does not declare it in durable({ signals })`);
    if (this.done) return never();
    const recorded = this.o.journal.step(stepId);
    if (recorded && recorded.kind !== "wait") return this.nondeterminism(stepId, `a ${recorded.kind} step`, "a wait step");
    if (recorded) this.visited.add(stepId);
    // The link step belongs to its wait: once the wait is decided, replay no longer calls notify.
    const notified = recorded ? this.o.journal.step(`${stepId}:notify`) : undefined;
    if (notified) {
      this.visited.add(notified.stepId);
      // A link that could not be sent failed the wait; a signal that came later changes nothing.
      if (notified.kind === "run" && notified.status === "failed") return this.fromRecord(notified);
    }
    const timeoutAt = recorded ? recorded.timeoutAt : timeoutMs === undefined ? undefined : this.o.now() + timeoutMs;

    let resolution = this.o.journal.resolution(stepId);
    let adopted = false;
    if (!resolution) {
      const buffered = this.o.journal.bufferedSignals(name, stepId).find((s) => !this.claimedSignals.has(s.signalId));
      const timedOut = timeoutAt !== undefined && this.o.now() >= timeoutAt;
      if (buffered || timedOut) {
        if (buffered) this.claimedSignals.add(buffered.signalId);
        if (!recorded) await this.write({ type: "step", kind: "wait", stepId, signal: name, ...(timeoutAt === undefined ? {} : { timeoutAt }) });
        const ours: Unstamped<ResolutionRecord> = buffered ? { type: "resolution", stepId, via: "signal", signalId: buffered.signalId } : { type: "resolution", stepId, via: "timeout" };
        const written = await this.write<ResolutionRecord>(ours);
        resolution = written.record;
        adopted = !written.won;
        if (buffered && resolution.signalId !== buffered.signalId) this.claimedSignals.delete(buffered.signalId);
        if (resolution.via === "signal" && recorded?.timeoutAt !== undefined) this.cancelledWakes.push(`timeout:${stepId}`);
        this.emit({ stepId, kind: "wait", outcome: "resolved" });
      }
    } else {
      this.emit({ stepId, kind: "wait", outcome: "replayed" });
    }
    if (resolution) {
      if (resolution.via === "timeout") return { received: false };
      const signal = resolution.signalId === undefined ? undefined : this.o.journal.signal(resolution.signalId);
      if (!signal && adopted) {
        // We lost the race to a signal delivered after our journal was loaded: read it next time.
        return this.block({ stepId, wakeAt: this.o.now(), key: "continue", reason: "continue", waitingFor: `signal:${name}` });
      }
      if (!signal) return this.nondeterminism(stepId, `a resolution by signal ${resolution.signalId} with no such signal`, "a wait");
      return { received: true, payload: schema.parse(signal.payload), signalId: signal.signalId };
    }
    const waitRecord: Unstamped<StepRecord> = { type: "step", kind: "wait", stepId, signal: name, ...(timeoutAt === undefined ? {} : { timeoutAt }) };
    let written = recorded !== undefined;
    if (options?.notify) {
      // The wait is recorded before its link goes out, so the link always points at a real wait.
      if (!written) await this.write(waitRecord);
      written = true;
      await this.notify(stepId, name, timeoutAt, options.notify);
    }
    const blocker: Blocker = { stepId, key: `timeout:${stepId}`, reason: "timeout", waitingFor: `signal:${name}`, signal: name };
    if (timeoutAt !== undefined) blocker.wakeAt = timeoutAt;
    if (!written) blocker.record = waitRecord;
    return this.block(blocker);
  }

  /** Hands the approver a capability link, once: a journaled step with an id derived from the wait's. */
  private async notify(waitId: string, signal: string, expiresAt: number | undefined, notify: NonNullable<WaitOptions["notify"]>): Promise<void> {
    const links = this.o.links;
    if (!this.ownsLease()) return never();
    if (!links) throw new WorkflowDefinitionError(`wait "${waitId}" asks for an approval link, but this runtime has no webhook secret configured`);
    const { token, url } = links.mint({ runId: this.o.runId, waitId, signal, ...(expiresAt === undefined ? {} : { expiresAt }) });
    await this.runStepWithId(
      `${waitId}:notify`,
      async () => {
        await notify({ runId: this.o.runId, waitId, token, url, expiresAt });
        return null;
      },
      undefined,
      false,
    );
  }

  // ---- step.now -------------------------------------------------------------------------

  private now(): number {
    const ordinal = String(this.nowOrdinal++);
    const recorded = this.o.journal.mark(ordinal);
    if (recorded !== undefined) return recorded;
    const value = this.o.now();
    this.pendingMarks[ordinal] = value;
    return value;
  }

  /** Writes the records of blockers first met in this execution (at suspension, after the wake is scheduled). */
  async persistBlockers(): Promise<void> {
    for (const blocker of this.blockers) if (blocker.record) await this.write(blocker.record);
  }

  // ---- machinery ------------------------------------------------------------------------

  /** Stamps and appends a record; pending `now()` marks ride along (no extra write). */
  private async write<R extends JournalRecord>(body: Unstamped<R>): Promise<{ record: R; won: boolean }> {
    const at = this.o.now();
    const record = { ...body, v: JOURNAL_VERSION, at } as JournalRecord;
    const markKeys = Object.keys(this.pendingMarks);
    if (markKeys.length > 0) {
      record.marks = { ...this.pendingMarks };
      for (const k of markKeys) delete this.pendingMarks[k];
    }
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

  private nextId(name: string): string {
    assertName("step", name);
    const n = (this.counters.get(name) ?? 0) + 1;
    this.counters.set(name, n);
    return n === 1 ? name : `${name}#${n}`;
  }

  private emit(event: Omit<StepEvent, "runId">): void {
    this.o.onStep?.({ runId: this.o.runId, ...event });
  }

  /** False once the engine learns the lease is gone: no new step may start. */
  private ownsLease(): boolean {
    if (this.o.ownsLease === undefined || this.o.ownsLease()) return true;
    this.abort(new LeaseLostError(this.o.runId), true);
    return false;
  }

  /** Ends the execution at once, for a reason outside the workflow (journal fault, lost lease). */
  private abort(error: unknown, leaseLost: boolean): void {
    if (this.done) return;
    this.done = true;
    this.resolveOutcome({ type: "aborted", error, leaseLost });
  }

  private nondeterminism(stepId: string, expected: string, found: string): Promise<never> {
    this.fatal ??= new NonDeterminismError(stepId, expected, found);
    this.checkQuiescent();
    return never();
  }

  private block<T>(blocker: Blocker): Promise<T> {
    this.blockers.push(blocker);
    this.emit({ stepId: blocker.stepId, kind: blocker.reason === "sleep" ? "sleep" : blocker.reason === "timeout" ? "wait" : "run", outcome: "blocked" });
    this.checkQuiescent();
    return never();
  }

  private settle(result: { ok: true; value: unknown } | { ok: false; error: unknown }): void {
    this.settled ??= result;
    this.checkQuiescent();
  }

  /**
   * Ends the execution once nothing is in flight and the workflow has settled or is blocked.
   * The check runs after pending microtasks (setImmediate), so code that continues after a
   * step resolves gets to start its next step first.
   */
  private checkQuiescent(): void {
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

  private decide(): Outcome {
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
}
