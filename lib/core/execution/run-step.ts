/**
 * `step.run`: a journaled step. Recorded: its result (or failure) comes back from the journal, in
 * the order results were first delivered live. New: its body runs — each attempt only while the
 * invocation provably owns the run, retried by its policy (a retry that is not due yet suspends),
 * at-most-once when asked (a `start` marker before each attempt) — and its record is written once.
 * A run's cancellation is delivered at the first step that starts after it (or out of the bodies
 * running then), and once delivered only compensations run.
 */
import type { StepRunContext, StepRunOptions } from "../definition.ts";
import { parseDuration } from "../duration.ts";
import { attemptNow, isThenable, runAttempt } from "../attempt.ts";
import { serializeError } from "../error-codec.ts";
import { CancelledError, type SerializedError, StepInterruptedError, ValueTooLargeError } from "../errors.ts";
import { assertJsonSafe, DEFAULT_MAX_VALUE_BYTES, jsonBytes } from "../json.ts";
import { Later, lazy } from "../lazy.ts";
import type { AttemptRecord, RunStepRecord, StartRecord, StepRecord, Unstamped } from "../records.ts";
import { nextRetryAt, resolveRetry } from "../retry.ts";
import { isTooLargeForStore, resultOf } from "./core.ts";
import { never } from "./never.ts";
import type { Scope } from "./scope.ts";

/** `step.run(name, fn, options)` in `scope`. */
export function runStep<T>(scope: Scope, name: string, fn: (ctx: StepRunContext) => Promise<T> | T, options?: StepRunOptions): Promise<T> {
  const core = scope.core;
  const stepId = scope.nextId(name);
  if (core.done || core.fatal) return never(); // ended, or the code already diverged from the journal
  const running = runStepWithId(scope, stepId, fn, options);
  // A result kept by reference is read when the code awaits it, not before (lazy.ts). Only a
  // recorded result by reference comes back as a `Later` (a live one is handed over as it is),
  // so every other step is its plain promise: replay allocates no lazy wrapper per step.
  const recorded = core.o.journal.step(stepId);
  return recorded?.kind === "run" && recorded.status === "ok" && recorded.resultRef ? lazy(running) : (running as Promise<T>);
}

/** A journaled step with its id decided; `ordered: false` for steps no code awaits in order (a wait's `:notify`, a child's `:start`). */
export function runStepWithId<T>(scope: Scope, stepId: string, fn: (ctx: StepRunContext) => Promise<T> | T, options?: StepRunOptions, ordered = true): Promise<T | Later<T>> {
  const core = scope.core;
  // An execution that has ended (aborted, stopped) starts nothing, not even the next item of a map.
  if (core.done) return never();
  core.visited.add(stepId);
  const recorded = core.o.journal.step(stepId);
  // Replay takes a small function of its own: the new step's frame (its closures, its many
  // locals) would otherwise be allocated for every recorded step too (~0.9 KB each).
  return recorded ? replayStep<T>(scope, stepId, recorded, ordered) : runNewStep(scope, stepId, fn, options, ordered);
}

/**
 * A recorded step: its result (or failure) in its delivery turn. Not an async function: a step
 * whose turn has come settles its promise at once, with no frame kept for it (the same one turn
 * of the microtask queue for the code awaiting it).
 */
function replayStep<T>(scope: Scope, stepId: string, recorded: StepRecord, ordered: boolean): Promise<T | Later<T>> {
  const core = scope.core;
  if (recorded.kind !== "run") return core.nondeterminism(stepId, `a ${recorded.kind} step`, "a run step");
  if (recorded.status === "failed" && recorded.error?.name === "CancelledError") core.cancellation.markDelivered();
  const turn = ordered && recorded.seq !== undefined ? scope.order.turn(stepId) : undefined;
  if (turn) return turn.then(() => replayed<T>(scope, stepId, recorded));
  try {
    return Promise.resolve(replayed<T>(scope, stepId, recorded));
  } catch (err) {
    return Promise.reject(err);
  }
}

/** A recorded step's outcome, handed over: its value, a `Later` for a result by reference, or its failure thrown. */
function replayed<T>(scope: Scope, stepId: string, recorded: RunStepRecord): T | Later<T> {
  const core = scope.core;
  core.emit({ stepId, kind: "run", outcome: "replayed", attempt: recorded.attempts });
  if (recorded.status === "ok" && recorded.resultRef) return core.later<T>(recorded.resultRef);
  return resultOf<T>(recorded);
}

/** A step with no record: its body runs, attempt by attempt, and its record is written once. */
async function runNewStep<T>(scope: Scope, stepId: string, fn: (ctx: StepRunContext) => Promise<T> | T, options: StepRunOptions | undefined, ordered: boolean): Promise<T | Later<T>> {
  const core = scope.core;
  const o = core.o;
  if (o.replayOnly) return core.frontier(scope, stepId, "run");
  // Until its record is written (a retry not due yet suspends first), this scope's recorded
  // results above a hole wait (delivery-order.ts).
  const recording = ordered ? scope.order.running() : undefined;
  const compensation = options?.compensation === true;
  const policy = resolveRetry(options?.retries, o.workflow.retry);
  const timeoutMs = options?.timeout === undefined ? undefined : parseDuration(options.timeout);
  const atMostOnce = options?.semantics === "at-most-once";
  const prior = o.journal.attempts(stepId);
  const last = prior.at(-1);
  const cancelHere = core.cancelStops(compensation);
  if (!cancelHere && last && last.retryAt > o.now()) return core.retryAt(scope, stepId, last.retryAt);
  if (!cancelHere && o.shouldYield?.()) return core.continueNow(scope, stepId, "continue");

  core.inflight++;
  let running = true;
  const written = () => {
    // The record is written: the step no longer holds the execution open, even while its
    // result waits its turn to be delivered.
    if (!running) return;
    running = false;
    core.inflight--;
    core.checkQuiescent();
  };
  const settle = recording
    ? () => {
        recording();
        written();
      }
    : written;
  const fail = (attempts: number) => {
    core.cancellation.markDelivered();
    const error = serializeError(core.cancellation.error());
    return deliver<T>(scope, runRecord(stepId, "failed", attempts, o.now(), atMostOnce, 0, error), settle, "failed", ordered);
  };
  try {
    if (cancelHere) {
      // The cancellation is delivered here: this step does not run, it fails with it.
      if (!core.ownsLease()) return never();
      return await fail(Math.max(1, prior.length));
    }
    const starts = o.journal.starts(stepId);
    const interrupted = atMostOnce ? starts.find((n) => !prior.some((a) => a.attempt === n)) : undefined;
    if (interrupted !== undefined) {
      // Started and never finished: the body may have had its effect. Not run again.
      if (!core.ownsLease()) return never();
      const error = serializeError(new StepInterruptedError(stepId, interrupted));
      return await deliver<T>(scope, runRecord(stepId, "failed", interrupted, o.now(), atMostOnce, 0, error), settle, "failed", ordered);
    }
    // At-least-once: invocations that left nothing in the journal since its last record may
    // each have run this body and died before recording it. Say so rather than claim one run.
    const possibleReruns = !atMostOnce && o.invocation !== undefined ? (o.journal.possibleReruns(o.invocation) ?? 0) : 0;
    for (let attempt = Math.max(prior.length, starts.at(-1) ?? 0) + 1; ; attempt++) {
      // Prove ownership before every side effect: a lease not expired by our own clock.
      if (!core.ownsLease()) return never();
      if (atMostOnce) {
        await core.write<StartRecord>({ type: "start", stepId, attempt });
        // The marker's write took time: the execution may have ended meanwhile (its lease lost).
        if (!core.ownsLease()) return never();
      }
      // A write just now (the start marker, a failed attempt's record) may have found the run
      // cancelled: then the body does not run, and the step fails with the cancellation.
      if (core.cancelStops(compensation)) return await fail(attempt);
      const startedAt = o.now();
      // Only the step's own failure (or a result that cannot be journaled) is the step failing;
      // a journal write that fails aborts the invocation instead (see `write`).
      let value: T;
      try {
        const key = `${core.journalId}/${stepId}`;
        const counted = (ctx: StepRunContext) => core.bodies.run(fn, ctx);
        const cancel = compensation ? undefined : core.cancellation.signal;
        const around = o.aroundAttempt;
        // Without a hook, a function that returns without a promise is not awaited (attemptNow).
        const got = around
          ? around({ runId: o.runId, workflow: o.workflow.name, stepId, attempt }, () => runAttempt(key, stepId, counted, attempt, timeoutMs, cancel, core.timers))
          : attemptNow(key, stepId, counted, attempt, timeoutMs, cancel, core.timers);
        value = isThenable(got) ? await got : got;
        assertJsonSafe(value, `result of step "${stepId}"`);
        const size = jsonBytes(value);
        const limit = o.maxValueBytes ?? DEFAULT_MAX_VALUE_BYTES;
        if (size > limit) throw new ValueTooLargeError(`the result of step "${stepId}"`, size, limit, o.payloads ? "payloads" : "journal");
      } catch (err) {
        const error = serializeError(err);
        // Cancelled while running: the late result is not recorded as success, and no retry.
        if (err instanceof CancelledError) core.cancellation.markDelivered();
        const retryAt = err instanceof CancelledError ? undefined : nextRetryAt(policy, err, attempt, o.now(), `${core.journalId}/${stepId}`);
        if (retryAt === undefined) {
          return await deliver<T>(scope, runRecord(stepId, "failed", attempt, startedAt, atMostOnce, possibleReruns, error), settle, "failed", ordered);
        }
        await core.write<AttemptRecord>({ type: "attempt", stepId, attempt, error, retryAt, startedAt });
        core.emit({ stepId, kind: "run", outcome: "retrying", attempt, durationMs: o.now() - startedAt });
        if (retryAt > o.now()) return core.retryAt(scope, stepId, retryAt);
        continue;
      }
      // No payload store: the result stays inline, without a turn of the microtask queue.
      const ref = o.payloads ? await core.offload(value) : undefined;
      if (ref === null) return never(); // the payload store failed: the invocation is aborted
      const body = runRecord(stepId, "ok", attempt, startedAt, atMostOnce, possibleReruns);
      if (ref === undefined) body.result = value;
      else body.resultRef = ref;
      return await deliver<T>(scope, body, settle, "completed", ordered, value);
    }
  } finally {
    written();
  }
}

/**
 * A run step's record, built field by field: an object spread followed by properties costs ~1 µs
 * on Node 20 (V8 11.3), a step's whole engine time; the caller adds a result.
 */
function runRecord(stepId: string, status: "ok" | "failed", attempts: number, startedAt: number, atMostOnce: boolean, possibleReruns: number, error?: SerializedError): Omit<Unstamped<RunStepRecord>, "seq"> {
  const body: Omit<Unstamped<RunStepRecord>, "seq"> = { type: "step", kind: "run", stepId, status, attempts, startedAt };
  if (error) body.error = error;
  if (atMostOnce) body.semantics = "at-most-once";
  if (possibleReruns > 0) body.possibleReruns = possibleReruns;
  return body;
}

/**
 * Writes a finished step's record and hands its result over in delivery order. A record the
 * store refuses as too large (its own limit, below ours) fails the step instead, once.
 */
async function deliver<T>(scope: Scope, body: Omit<Unstamped<RunStepRecord>, "seq">, written: () => void, outcome: "completed" | "failed", ordered: boolean, live?: T): Promise<T> {
  const core = scope.core;
  const seq = ordered ? scope.order.take(body.stepId) : undefined;
  // The caller's fresh literal, its position added in place (a spread would copy it: see `stamp`).
  const withSeq: Unstamped<RunStepRecord> = body;
  if (seq !== undefined) withSeq.seq = seq;
  const { record } = await core.write<RunStepRecord>(withSeq, "fence", (err) => {
    if (body.status !== "ok" || !isTooLargeForStore(err)) return undefined;
    const size = jsonBytes(body.result);
    const error = serializeError(new ValueTooLargeError(`the result of step "${body.stepId}"`, size, (err as { limitBytes?: number }).limitBytes ?? size));
    outcome = "failed";
    return { ...withSeq, status: "failed", result: undefined, error } as Unstamped<RunStepRecord>;
  });
  written();
  const turn = scope.order.turn(seq === undefined ? undefined : body.stepId);
  if (turn) await turn;
  core.emit({ stepId: body.stepId, kind: "run", outcome, attempt: body.attempts, durationMs: core.o.now() - body.startedAt });
  // A result stored by reference is handed over as the live value, without reading it back.
  if (record.status === "ok" && record.resultRef) return live as T;
  return resultOf<T>(record);
}
