/**
 * One execution of a workflow's code against its journal: the replay state machine behind the
 * step API. It knows nothing of leases, stores or queues: it reads the parsed journal, appends
 * records through `append`, and ends in an {@link Outcome} the engine persists.
 *
 * Suspension is not an exception: a step that must wait returns a promise that never settles,
 * so user code cannot catch it. The execution ends when the workflow settles, or when nothing is
 * running and something is blocked, after in-flight steps have written their records.
 *
 * This file holds the step kinds (run, sleep, waitForSignal); how an execution writes, blocks
 * and decides it has ended is in execution-state.ts, `now()`/`random()` in replay-values.ts.
 */
import { runAttempt } from "./attempt.ts";
import { assertName, type Step, type StepRunContext, type StepRunOptions, type WaitOptions, type WaitResult } from "./definition.ts";
import { parseDuration } from "./duration.ts";
import { serializeError } from "./error-codec.ts";
import type { StandardSchemaV1 } from "./standard-schema.ts";
import { CancelledError, InvalidInputError, NonDeterminismError, StepInterruptedError, ValueTooLargeError, WorkflowDefinitionError } from "./errors.ts";
import { ExecutionState, isTooLargeForStore, never, resultOf } from "./execution-state.ts";
import type { Blocker } from "./execution-types.ts";
import { Later, lazy } from "./lazy.ts";
import { loadRef } from "./payloads.ts";
import type { PayloadRef } from "../ports.ts";
import { assertJsonSafe, DEFAULT_MAX_INPUT_BYTES, DEFAULT_MAX_VALUE_BYTES, jsonBytes } from "./json.ts";
import { validate } from "./validate.ts";
import { boundedMap, type MapFn, type MapOptions } from "./fan-out.ts";
import { createSaga } from "./saga.ts";
import { CHILD_SIGNAL, childOutcomeSchema, type ChildHost, type ChildOptions, runChild } from "./children.ts";
import type { AnyWorkflow } from "./definition.ts";
import { zodIssues } from "./zod-issues.ts";
import type { AttemptRecord, ResolutionRecord, RunStepRecord, StartRecord, StepRecord, Unstamped } from "./records.ts";
import { nextRetryAt, resolveRetry } from "./retry.ts";
import { parse } from "./validate.ts";
import { createStepLog, journaledStepIds } from "./step-log.ts";

export type { AttemptHook, AttemptInfo, Blocker, ExecutionOptions, Outcome, StepEvent, StepLogLine } from "./execution-types.ts";

export class Execution extends ExecutionState {
  private readonly claimedSignals = new Set<string>();
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
      sleepUntil: (name, until) => this.sleep(name, () => (typeof until === "number" ? until : until.getTime())),
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
  private async runStepWithId<T>(stepId: string, fn: (ctx: StepRunContext) => Promise<T> | T, options?: StepRunOptions, ordered = true): Promise<T | Later<T>> {
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
    const cancelHere = this.cancellation.pending;
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
        const startedAt = this.o.now();
        // Only the step's own failure (or a result that cannot be journaled) is the step failing;
        // a journal write that fails aborts the invocation instead (see `write`).
        let value: T;
        try {
          const body = () => runAttempt(`${this.o.journalId ?? this.o.runId}/${stepId}`, stepId, fn, attempt, timeoutMs, this.cancellation.signal);
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
      nextId: (name) => {
        const id = this.nextId(name);
        return this.done || this.fatal ? undefined : id;
      },
      step: (stepId, fn) => lazy(this.runStepWithId(stepId, fn, { retries: 1 }, false)),
      wait: (stepId) => lazy(this.waitWithId(stepId, CHILD_SIGNAL, childOutcomeSchema, undefined)),
      port: this.o.children,
      onCancelled: (childRunId, cancelWithParent) => {
        if (cancelWithParent && this.cancellation.wasDelivered) void this.o.children?.cancel(childRunId, `its parent was cancelled: ${this.cancellation.reason}`).catch(() => {});
      },
    };
  }

  // ---- step.map -------------------------------------------------------------------------

  private async map(name: string, items: readonly unknown[], fn: MapFn<unknown, unknown>, options: MapOptions = {}): Promise<unknown> {
    const mapId = this.nextId(name);
    if (this.done || this.fatal) return never();
    const list = [...items];
    const { concurrency = 10, failures = "fail-fast", ...stepOptions } = options;
    // Unordered steps: the map orders its results by index itself.
    const outcomes = await boundedMap(list.length, concurrency, failures === "fail-fast", (index) =>
      this.runStepWithId(`${mapId}/${index}`, (ctx) => fn(list[index], { ...ctx, index }), stepOptions, false),
    );
    return failures === "collect" ? outcomes : outcomes.map((o) => (o.ok ? o.value : undefined));
  }

  // ---- step.continueAsNew ---------------------------------------------------------------

  private continueAsNew(input: unknown): Promise<never> {
    if (this.done || this.fatal) return never();
    const checked = validate(this.o.workflow.input, input);
    if (!checked.success) throw new InvalidInputError(`continueAsNew: invalid input for workflow "${this.o.workflow.name}"`, zodIssues(checked.error));
    assertJsonSafe(input, "continueAsNew input");
    const size = jsonBytes(input);
    if (size > DEFAULT_MAX_INPUT_BYTES) throw new ValueTooLargeError("the continueAsNew input", size, DEFAULT_MAX_INPUT_BYTES);
    this.settle({ continued: input });
    return never();
  }

  // ---- step.sleep -----------------------------------------------------------------------

  private async sleep(name: string, wakeAtIfNew: () => number): Promise<void> {
    const stepId = this.nextId(name);
    if (this.done || this.fatal) return never(); // ended, or the code already diverged from the journal
    const recorded = this.o.journal.step(stepId);
    if (recorded && recorded.kind !== "sleep") return this.nondeterminism(stepId, `a ${recorded.kind} step`, "a sleep step");
    let wakeAt: number;
    if (recorded) {
      this.visited.add(stepId);
      wakeAt = recorded.wakeAt;
    } else {
      if (this.o.replayOnly) return this.frontier(stepId, "sleep");
      wakeAt = wakeAtIfNew();
      if (!Number.isFinite(wakeAt)) throw new WorkflowDefinitionError(`sleep "${stepId}": invalid wake time`);
    }
    if (this.o.journal.resolution(stepId)?.via === "cancelled") {
      this.cancellation.markDelivered();
      throw this.cancellation.error();
    }
    if (this.o.now() < wakeAt && this.cancellation.pending && !this.o.replayOnly) {
      // Delivered here: the sleep ends early with the cancellation (journaled, so replay agrees).
      if (!recorded) await this.write({ type: "step", kind: "sleep", stepId, wakeAt });
      const { record } = await this.write<ResolutionRecord>({ type: "resolution", stepId, via: "cancelled" }, "adopt");
      if (record.via === "cancelled") {
        this.cancellation.markDelivered();
        throw this.cancellation.error();
      }
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

  private async wait(name: string, options: WaitOptions | undefined): Promise<WaitResult<unknown> | Later<WaitResult<unknown>>> {
    const stepId = this.nextId(name);
    const schema = Object.hasOwn(this.o.workflow.signals, name) ? this.o.workflow.signals[name] : undefined;
    if (!schema) throw new WorkflowDefinitionError(`workflow "${this.o.workflow.name}" waits for signal "${name}" but does not declare it in durable({ signals })`);
    return this.waitWithId(stepId, name, schema, options);
  }

  /** A wait with its id and schema decided: user signals, and a child run's outcome (children.ts). */
  protected async waitWithId(stepId: string, name: string, schema: StandardSchemaV1, options: WaitOptions | undefined): Promise<WaitResult<unknown> | Later<WaitResult<unknown>>> {
    const timeoutMs = options?.timeout === undefined ? undefined : parseDuration(options.timeout);
    if (this.done || this.fatal) return never(); // ended, or the code already diverged from the journal
    const recorded = this.o.journal.step(stepId);
    if (recorded && recorded.kind !== "wait") return this.nondeterminism(stepId, `a ${recorded.kind} step`, "a wait step");
    if (recorded) this.visited.add(stepId);
    else if (this.o.replayOnly) return this.frontier(stepId, "wait");
    // The link step belongs to its wait: once the wait is decided, replay no longer calls notify.
    const notified = recorded ? this.o.journal.step(`${stepId}:notify`) : undefined;
    if (notified) {
      this.visited.add(notified.stepId);
      // A link that could not be sent failed the wait; a signal that came later changes nothing.
      if (notified.kind === "run" && notified.status === "failed") return resultOf(notified);
    }
    const timeoutAt = recorded ? recorded.timeoutAt : timeoutMs === undefined ? undefined : this.o.now() + timeoutMs;

    let resolution = this.o.journal.resolution(stepId);
    let adopted = false;
    if (!resolution) {
      const buffered = this.o.journal.bufferedSignals(name, stepId).find((s) => !this.claimedSignals.has(s.signalId));
      const timedOut = timeoutAt !== undefined && this.o.now() >= timeoutAt;
      if (!buffered && !timedOut && this.cancellation.pending && !this.o.replayOnly) {
        // Delivered here, unless a signal or the timeout decided the wait first.
        if (!recorded) await this.write({ type: "step", kind: "wait", stepId, signal: name, ...(timeoutAt === undefined ? {} : { timeoutAt }) });
        const written = await this.write<ResolutionRecord>({ type: "resolution", stepId, via: "cancelled" }, "adopt");
        resolution = written.record;
        adopted = !written.won;
      } else if (buffered || timedOut) {
        if (buffered) this.claimedSignals.add(buffered.signalId);
        if (!recorded) await this.write({ type: "step", kind: "wait", stepId, signal: name, ...(timeoutAt === undefined ? {} : { timeoutAt }), ...summaryOf(options) });
        const ours: Unstamped<ResolutionRecord> = buffered ? { type: "resolution", stepId, via: "signal", signalId: buffered.signalId } : { type: "resolution", stepId, via: "timeout" };
        const written = await this.write<ResolutionRecord>(ours, "adopt");
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
      if (resolution.via === "cancelled") {
        this.cancellation.markDelivered();
        throw this.cancellation.error();
      }
      if (resolution.via === "timeout") return { received: false };
      const signal = resolution.signalId === undefined ? undefined : this.o.journal.signal(resolution.signalId);
      if (!signal && adopted) {
        // We lost the race to a signal delivered after our journal was loaded: read it next time.
        return this.continueNow(stepId, `signal:${name}`);
      }
      if (!signal) return this.nondeterminism(stepId, `a resolution by signal ${resolution.signalId} with no such signal`, "a wait");
      const sender = signal.sender ? { sender: signal.sender } : {};
      if (signal.payloadRef) {
        const payload = this.later<unknown>(signal.payloadRef);
        return new Later(async () => ({ received: true as const, payload: parse(schema, await payload.load()), signalId: signal.signalId, ...sender }));
      }
      return { received: true, payload: parse(schema, signal.payload), signalId: signal.signalId, ...sender };
    }
    const waitRecord: Unstamped<StepRecord> = { type: "step", kind: "wait", stepId, signal: name, ...(timeoutAt === undefined ? {} : { timeoutAt }), ...summaryOf(options) };
    let written = recorded !== undefined;
    if (options?.notify) {
      // The wait is recorded before its link goes out, so the link always points at a real wait.
      // Its record's time is when the link's lifetime starts: the same on every replay.
      const issuedAt = recorded ? recorded.at : (await this.write(waitRecord)).record.at;
      written = true;
      await this.notify(stepId, name, timeoutAt, issuedAt, options);
    }
    const blocker: Blocker = { stepId, key: `timeout:${stepId}`, reason: "timeout", waitingFor: `signal:${name}`, signal: name };
    if (timeoutAt !== undefined) blocker.wakeAt = timeoutAt;
    if (!written) blocker.record = waitRecord;
    return this.block(blocker);
  }

  /**
   * Hands the approvers capability links, once: a journaled step with an id derived from the
   * wait's. One link for anyone, or one per named approver.
   */
  private async notify(waitId: string, signal: string, timeoutAt: number | undefined, issuedAt: number, options: WaitOptions): Promise<void> {
    const links = this.o.links;
    const notify = options.notify;
    if (!this.ownsLease() || !notify) return never();
    if (!links) throw new WorkflowDefinitionError(`wait "${waitId}" asks for an approval link, but this runtime has no webhook secret configured`);
    const approvers = options.approvers === undefined ? [undefined] : checkApprovers(waitId, options.approvers);
    const minted = approvers.map((approver) => {
      const claims = { runId: this.o.runId, waitId, signal, runCreatedAt: this.o.runCreatedAt, issuedAt, ...(timeoutAt === undefined ? {} : { expiresAt: timeoutAt }) };
      const { token, url, expiresAt } = links.mint(approver === undefined ? claims : { ...claims, approver });
      return { runId: this.o.runId, waitId, token, url, expiresAt, ...(approver === undefined ? {} : { approver }) };
    });
    await this.runStepWithId(
      `${waitId}:notify`,
      async () => {
        for (const link of minted) await notify(link);
        return null;
      },
      undefined,
      false,
    );
  }

  // ---- values by reference (payloads.ts) ------------------------------------------------

  /**
   * Stores a step result over the inline threshold and returns its reference; `undefined` keeps
   * it inline. A store that fails aborts the invocation (user code never sees it) and answers
   * `null`: the transport retries the wake and the step runs again, as after a crash.
   */
  private async offload(value: unknown): Promise<PayloadRef | undefined | null> {
    const payloads = this.o.payloads;
    if (!payloads) return undefined;
    try {
      return await payloads.offload(this.o.runId, this.o.runCreatedAt, value);
    } catch (err) {
      this.abort(err, false);
      return null;
    }
  }

  /**
   * A recorded value to read when the code awaits it. The read holds the execution open like a
   * running step. A fault ends the invocation instead of reaching user code: a missing or altered
   * object fails the run (the engine sees `PayloadMissingError`/`PayloadIntegrityError`), a store
   * that cannot be reached is retried with the wake.
   */
  private later<T>(ref: PayloadRef): Later<T> {
    return new Later<T>(async () => {
      this.inflight++;
      try {
        return (await loadRef(this.o.payloads, ref)) as T;
      } catch (err) {
        this.abort(err, false);
        return never<T>();
      } finally {
        this.inflight--;
        this.checkQuiescent();
      }
    });
  }
}

/** Approvers must be distinct, non-empty names; a mistake here is the workflow's, not the run's. */
/** The wait's `summary`, checked: a short text for the approver's page. */
function summaryOf(options: WaitOptions | undefined): { summary?: string } {
  const summary = options?.summary;
  if (summary === undefined) return {};
  if (typeof summary !== "string" || summary.length > MAX_SUMMARY_LENGTH) throw new WorkflowDefinitionError(`a wait's summary must be a string of at most ${MAX_SUMMARY_LENGTH} characters`);
  return { summary };
}

const MAX_SUMMARY_LENGTH = 2000;

function checkApprovers(waitId: string, approvers: readonly string[]): string[] {
  const list = [...approvers];
  const bad = list.some((a) => typeof a !== "string" || a.length === 0 || a.length > 256);
  if (list.length === 0 || bad || new Set(list).size !== list.length) {
    throw new WorkflowDefinitionError(`wait "${waitId}": approvers must be a non-empty list of distinct names of 1-256 characters`);
  }
  return list;
}
