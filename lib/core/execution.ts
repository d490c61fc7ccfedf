/**
 * One execution of a workflow's code against its journal: the replay state machine behind the
 * step API. It knows nothing of leases, stores or queues: it reads the parsed journal, appends
 * records through `append`, and ends in an {@link Outcome} the engine persists.
 *
 * Suspension is not an exception: a step that must wait returns a promise that never settles,
 * so user code cannot catch it. The execution ends when the workflow settles, or when nothing is
 * running and something is blocked, after in-flight steps have written their records.
 *
 * This file holds `step.run` and what is built on it (map, children, continueAsNew) and the step
 * API; sleeps and waits are in execution-waits.ts; how an execution writes, blocks and decides it
 * has ended is in execution-state.ts; `now()`/`random()`/`patched()` in replay-values.ts.
 */
import { runAttempt } from "./attempt.ts";
import { assertName, type Step, type StepRunContext, type StepRunOptions } from "./definition.ts";
import { checkMoment, parseDuration } from "./duration.ts";
import { serializeError } from "./error-codec.ts";
import { CancelledError, InvalidInputError, StepInterruptedError, ValueTooLargeError } from "./errors.ts";
import { isTooLargeForStore, never, resultOf } from "./execution-state.ts";
import { WaitingExecution } from "./execution-waits.ts";
import type { Blocker } from "./execution-types.ts";
import { Later, lazy } from "./lazy.ts";
import { assertJsonSafe, DEFAULT_MAX_INPUT_BYTES, DEFAULT_MAX_VALUE_BYTES, jsonBytes } from "./json.ts";
import { validate } from "./validate.ts";
import { boundedMap, type MapFn, type MapOptions } from "./fan-out.ts";
import { createSaga } from "./saga.ts";
import { CHILD_SIGNAL, CHILD_START_RETRY, childOutcomeSchema, type ChildHost, type ChildOptions, runChild } from "./children.ts";
import type { AnyWorkflow } from "./definition.ts";
import { zodIssues } from "./zod-issues.ts";
import type { AttemptRecord, RunStepRecord, StartRecord, Unstamped } from "./records.ts";
import { nextRetryAt, resolveRetry } from "./retry.ts";
import { createStepLog, journaledStepIds } from "./step-log.ts";

export type { AttemptHook, AttemptInfo, Blocker, ExecutionOptions, Outcome, StepEvent, StepLogLine } from "./execution-types.ts";

export class Execution extends WaitingExecution {
  /** Step ids the code has called in this invocation, and the latest (for `step.log`). */
  private readonly reached = new Set<string>();
  private lastReached: string | undefined;

  protected override nextId(name: string): string {
    const id = super.nextId(name);
    this.reached.add(id);
    this.lastReached = id;
    return id;
  }

  protected stepApi(): Step {
    const api = {
      runId: this.o.runId,
      // Results kept by reference are read when the code awaits them, not before (lazy.ts).
      run: (name, fn, options) => lazy(this.runStep(name, fn, options)),
      sleep: (name, duration) => this.sleep(name, () => this.o.now() + parseDuration(duration)),
      sleepUntil: (name, until) => this.sleep(name, () => checkMoment(typeof until === "number" ? until : until.getTime(), this.o.now())),
      waitForSignal: (name, options) => lazy(this.wait(name, options)),
      patched: (id: string) => {
        assertName("patch", id);
        // Old code already went past this point if the journal holds steps not reached yet.
        return this.values.patched(id, () => !this.replayingPastHere());
      },
      deprecatePatch: (id: string) => {
        assertName("patch", id);
        // The recorded answer, or the rule patched() applies (a run whose journal passed this
        // point took the old path); the rule alone decides the same way on every replay.
        if ((this.values.recordedPatch(id) ?? !this.replayingPastHere()) === false) {
          void this.nondeterminism(`patch:${id}`, `a run that took the path before patch "${id}"`, "code where the patch is deprecated (only the new path)");
        }
      },
      continueAsNew: (input: unknown) => this.continueAsNew(input),
      map: ((name: string, items: readonly unknown[], fn: MapFn<unknown, unknown>, options?: MapOptions) => this.map(name, items, fn, options)) as Step["map"],
      saga: () => createSaga(api),
      invoke: ((name: string, workflow: AnyWorkflow, options: ChildOptions<unknown>) => runChild(this.childHost(), name, workflow, options, true)) as Step["invoke"],
      start: ((name: string, workflow: AnyWorkflow, options: ChildOptions<unknown>) => runChild(this.childHost(), name, workflow, options, false)) as Step["start"],
      now: () => new Date(this.values.now()),
      random: () => this.values.random(),
      uuid: () => this.values.uuid(),
      log: createStepLog(journaledStepIds(this.o.journal), this.reached, () => this.lastReached, this.o.onLog),
    } satisfies Step as Step;
    return api;
  }

  // ---- step.run -------------------------------------------------------------------------

  private async runStep<T>(name: string, fn: (ctx: StepRunContext) => Promise<T> | T, options?: StepRunOptions): Promise<T | Later<T>> {
    const stepId = this.nextId(name);
    if (this.done || this.fatal) return never(); // ended, or the code already diverged from the journal
    return this.runStepWithId(stepId, fn, options);
  }

  /** `ordered: false` for steps whose result no code awaits in order (a wait's `:notify`). */
  protected async runStepWithId<T>(stepId: string, fn: (ctx: StepRunContext) => Promise<T> | T, options?: StepRunOptions, ordered = true): Promise<T | Later<T>> {
    // An execution that has ended (aborted, stopped) starts nothing, not even the next item of a map.
    if (this.done) return never();
    const recorded = this.o.journal.step(stepId);
    if (recorded) {
      if (recorded.kind !== "run") return this.nondeterminism(stepId, `a ${recorded.kind} step`, "a run step");
      if (recorded.status === "failed" && recorded.error?.name === "CancelledError") this.cancellation.markDelivered();
      this.visited.add(stepId);
      const turn = ordered && recorded.seq !== undefined ? this.order.turn(stepId) : undefined;
      if (turn) await turn;
      this.emit({ stepId, kind: "run", outcome: "replayed", attempt: recorded.attempts });
      if (recorded.status === "ok" && recorded.resultRef) return this.later<T>(recorded.resultRef);
      return resultOf<T>(recorded);
    }
    if (this.o.replayOnly) return this.frontier(stepId, "run");
    const policy = resolveRetry(options?.retries, this.o.workflow.retry);
    const timeoutMs = options?.timeout === undefined ? undefined : parseDuration(options.timeout);
    const atMostOnce = options?.semantics === "at-most-once";
    const prior = this.o.journal.attempts(stepId);
    const last = prior.at(-1);
    const cancelHere = this.cancelStops(options?.compensation === true);
    if (!cancelHere && last && last.retryAt > this.o.now()) {
      return this.retryAt(stepId, last.retryAt);
    }
    if (!cancelHere && this.o.shouldYield?.()) return this.continueNow(stepId, "continue");

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
    const semantics = atMostOnce ? { semantics: "at-most-once" as const } : {};
    try {
      if (cancelHere) {
        // The cancellation is delivered here: this step does not run, it fails with it.
        if (!this.ownsLease()) return never();
        this.cancellation.markDelivered();
        const error = serializeError(this.cancellation.error());
        return await this.deliver<T>({ type: "step", kind: "run", stepId, status: "failed", error, attempts: Math.max(1, prior.length), startedAt: this.o.now() }, written, "failed", ordered);
      }
      const starts = this.o.journal.starts(stepId);
      const interrupted = atMostOnce ? starts.find((n) => !prior.some((a) => a.attempt === n)) : undefined;
      if (interrupted !== undefined) {
        // Started and never finished: the body may have had its effect. Not run again.
        if (!this.ownsLease()) return never();
        const error = serializeError(new StepInterruptedError(stepId, interrupted));
        return await this.deliver<T>({ type: "step", kind: "run", stepId, status: "failed", error, attempts: interrupted, startedAt: this.o.now(), ...semantics }, written, "failed", ordered);
      }
      // At-least-once: invocations that left nothing in the journal since its last record may
      // each have run this body and died before recording it. Say so rather than claim one run.
      const possibleReruns = !atMostOnce && this.o.invocation !== undefined ? (this.o.journal.possibleReruns(this.o.invocation) ?? 0) : 0;
      const reruns = possibleReruns > 0 ? { possibleReruns } : {};
      for (let attempt = Math.max(prior.length, starts.at(-1) ?? 0) + 1; ; attempt++) {
        // Prove ownership before every side effect: a lease not expired by our own clock.
        if (!this.ownsLease()) return never();
        if (atMostOnce) await this.write<StartRecord>({ type: "start", stepId, attempt });
        // The start marker's write took time: the execution may have ended meanwhile (its lease lost).
        if (atMostOnce && !this.ownsLease()) return never();
        // A write just now (the start marker, a failed attempt's record) may have found the run
        // cancelled: then the body does not run, and the step fails with the cancellation.
        if (this.cancelStops(options?.compensation === true)) {
          this.cancellation.markDelivered();
          const error = serializeError(this.cancellation.error());
          return await this.deliver<T>({ type: "step", kind: "run", stepId, status: "failed", error, attempts: attempt, startedAt: this.o.now(), ...semantics }, written, "failed", ordered);
        }
        const startedAt = this.o.now();
        // Only the step's own failure (or a result that cannot be journaled) is the step failing;
        // a journal write that fails aborts the invocation instead (see `write`).
        let value: T;
        try {
          const body = () => runAttempt(`${this.o.journalId ?? this.o.runId}/${stepId}`, stepId, fn, attempt, timeoutMs, options?.compensation ? undefined : this.cancellation.signal, this.timers);
          const around = this.o.aroundAttempt;
          value = around ? await around({ runId: this.o.runId, workflow: this.o.workflow.name, stepId, attempt }, body) : await body();
          assertJsonSafe(value, `result of step "${stepId}"`);
          const size = jsonBytes(value);
          const limit = this.o.maxValueBytes ?? DEFAULT_MAX_VALUE_BYTES;
          if (size > limit) throw new ValueTooLargeError(`the result of step "${stepId}"`, size, limit, this.o.payloads ? "payloads" : "journal");
        } catch (err) {
          const error = serializeError(err);
          // Cancelled while running: the late result is not recorded as success, and no retry.
          if (err instanceof CancelledError) this.cancellation.markDelivered();
          const retryAt = err instanceof CancelledError ? undefined : nextRetryAt(policy, err, attempt, this.o.now(), `${this.o.journalId ?? this.o.runId}/${stepId}`);
          if (retryAt === undefined) {
            return await this.deliver<T>({ type: "step", kind: "run", stepId, status: "failed", error, attempts: attempt, startedAt, ...semantics, ...reruns }, written, "failed", ordered);
          }
          await this.write<AttemptRecord>({ type: "attempt", stepId, attempt, error, retryAt, startedAt });
          this.emit({ stepId, kind: "run", outcome: "retrying", attempt, durationMs: this.o.now() - startedAt });
          if (retryAt > this.o.now()) {
            return this.retryAt(stepId, retryAt);
          }
          continue;
        }
        const ref = await this.offload(value);
        if (ref === null) return never(); // the payload store failed: the invocation is aborted
        const stored = ref === undefined ? { result: value } : { resultRef: ref };
        return await this.deliver<T>({ type: "step", kind: "run", stepId, status: "ok", ...stored, attempts: attempt, startedAt, ...semantics, ...reruns }, written, "completed", ordered, value);
      }
    } finally {
      written();
    }
  }

  /**
   * Writes a finished step's record and hands its result over in delivery order. A record the
   * store refuses as too large (its own limit, below ours) fails the step instead, once.
   */
  private async deliver<T>(body: Omit<Unstamped<RunStepRecord>, "seq">, written: () => void, outcome: "completed" | "failed", ordered: boolean, live?: T): Promise<T> {
    const seq = ordered ? this.order.take(body.stepId) : undefined;
    const withSeq: Unstamped<RunStepRecord> = seq === undefined ? body : { ...body, seq };
    const { record } = await this.write<RunStepRecord>(withSeq, "fence", (err) => {
      if (body.status !== "ok" || !isTooLargeForStore(err)) return undefined;
      const size = jsonBytes(body.result);
      const error = serializeError(new ValueTooLargeError(`the result of step "${body.stepId}"`, size, (err as { limitBytes?: number }).limitBytes ?? size));
      outcome = "failed";
      return { ...withSeq, status: "failed", result: undefined, error } as Unstamped<RunStepRecord>;
    });
    written();
    const turn = this.order.turn(seq === undefined ? undefined : body.stepId);
    if (turn) await turn;
    this.emit({ stepId: body.stepId, kind: "run", outcome, attempt: body.attempts, durationMs: this.o.now() - body.startedAt });
    // A result stored by reference is handed over as the live value, without reading it back.
    if (record.status === "ok" && record.resultRef) return live as T;
    return resultOf<T>(record);
  }

  // ---- step.invoke / step.start (children.ts) ----------------------------------------------

  private childHost(): ChildHost {
    return {
      runId: this.o.runId,
      incarnation: this.o.incarnation ?? 1,
      nextId: (name) => {
        const id = this.nextId(name);
        return this.done || this.fatal ? undefined : id;
      },
      // Starting a child is idempotent: a transient failure (a throttled store, a child function
      // mid-deploy, a lost answer) is retried; the child side's refusals are not retryable.
      step: (stepId, fn) => lazy(this.runStepWithId(stepId, fn, { retries: CHILD_START_RETRY }, false)),
      wait: (stepId) => lazy(this.waitWithId(stepId, CHILD_SIGNAL, childOutcomeSchema, undefined)),
      port: this.o.children,
      onCancelled: (child, cancelWithParent) => {
        // Awaited by the engine before the invocation ends (a frozen Lambda sends nothing later).
        if (cancelWithParent && this.cancellation.wasDelivered && this.o.children) {
          const reason = `its parent was cancelled: ${this.cancellation.reason}`;
          this.track(this.o.children.cancel({ workflow: child.workflow, runId: child.runId, reason, parent: { runId: this.o.runId, waitId: child.waitId } }));
        }
      },
    };
  }

  // ---- step.map -------------------------------------------------------------------------

  private async map(name: string, items: readonly unknown[], fn: MapFn<unknown, unknown>, options: MapOptions = {}): Promise<unknown> {
    const mapId = this.nextId(name);
    if (this.done || this.fatal) return never();
    const list = [...items];
    const { concurrency = 10, failures = "fail-fast", ...stepOptions } = options;
    // Unordered steps: the map orders its results by index itself. After a failure (fail-fast),
    // items the journal holds are still visited — they had started before it, live — so every
    // replay reaches the same items and throws the same failure.
    const outcomes = await boundedMap(
      list.length,
      concurrency,
      failures === "fail-fast",
      (index) => this.runStepWithId(`${mapId}/${index}`, (ctx) => fn(list[index], { ...ctx, index }), stepOptions, false),
      (index) => this.o.journal.step(`${mapId}/${index}`) !== undefined,
    );
    return failures === "collect" ? outcomes : outcomes.map((o) => (o.ok ? o.value : undefined));
  }

  // ---- step.continueAsNew ---------------------------------------------------------------

  private continueAsNew(input: unknown): Promise<never> {
    if (this.done || this.fatal) return never();
    // A cancellation requested during this incarnation is delivered here, not left behind in it
    // (and once delivered, the run is winding down: it does not go on as a new incarnation).
    if (this.cancelStops() && !this.o.replayOnly) {
      this.cancellation.markDelivered();
      return Promise.reject(this.cancellation.error());
    }
    const checked = validate(this.o.workflow.input, input);
    if (!checked.success) throw new InvalidInputError(`continueAsNew: invalid input for workflow "${this.o.workflow.name}"`, zodIssues(checked.error));
    assertJsonSafe(input, "continueAsNew input");
    const size = jsonBytes(input);
    if (size > DEFAULT_MAX_INPUT_BYTES) throw new ValueTooLargeError("the continueAsNew input", size, DEFAULT_MAX_INPUT_BYTES);
    this.settle({ continued: input });
    return never();
  }
}
