/**
 * `step.transact`: a step whose writes to the user's own DynamoDB tables commit in one
 * transaction with its journal record (run/transact.ts), so they happen exactly once. Recorded:
 * its result (or failure) comes back from the journal and nothing is sent. New: the body builds
 * the writes and returns the result; the writes are validated, then sent with the record.
 *
 * The record is an ordinary `run` step record (`semantics: "exactly-once"`), so replay, the
 * timeline and the dashboard see a completed step. Its delivery position (`seq`) is taken once,
 * at the first send, and then kept: a retry after a conflict or throttling (by the step's retry
 * policy) happens in this invocation, with the same position, so a result never waits for a
 * position left empty. Retries of the body before the first send follow `step.run`'s rules.
 */
import type { StepRunContext, StepRunOptions } from "../definition.ts";
import { parseDuration } from "../duration.ts";
import { runAttempt } from "../attempt.ts";
import { serializeError } from "../error-codec.ts";
import { CancelledError, LeaseLostError, StepFailedError, ValueTooLargeError } from "../errors.ts";
import { assertJsonSafe, DEFAULT_MAX_VALUE_BYTES, jsonBytes } from "../json.ts";
import type { AttemptRecord, JournalRecord, RunStepRecord, Unstamped } from "../records.ts";
import { nextRetryAt, resolveRetry } from "../retry.ts";
import { TransactConditionFailedError, TransactConflictError, TransactUnsupportedError, TransactValidationError, UnsupportedExpressionError } from "../transact/errors.ts";
import { collectWrites, keyOfOp, type Transaction, type TxOp } from "../transact/ops.ts";
import { validateWrites } from "../transact/validate.ts";
import { never } from "./never.ts";
import type { Scope } from "./scope.ts";

/** What `step.transact` takes besides its body: the retry policy (body failures, conflicts, throttling) and a per-attempt timeout. */
export type TransactOptions = Pick<StepRunOptions, "retries" | "timeout">;

/** A transact body: builds the writes on `tx`, returns the step's JSON result. */
export type TransactBody<T> = (tx: Transaction, ctx: StepRunContext) => Promise<T> | T;

/** `step.transact(name, body, options)` in `scope`. */
export function transactStep<T>(scope: Scope, name: string, body: TransactBody<T>, options?: TransactOptions): Promise<T> {
  const core = scope.core;
  const stepId = scope.nextId(name);
  if (core.done || core.fatal) return never();
  return transactWithId(scope, stepId, body, options);
}

async function transactWithId<T>(scope: Scope, stepId: string, body: TransactBody<T>, options?: TransactOptions): Promise<T> {
  const core = scope.core;
  const o = core.o;
  if (core.done) return never();
  core.visited.add(stepId);
  const recorded = o.journal.step(stepId);
  if (recorded) {
    if (recorded.kind !== "run" || recorded.semantics !== "exactly-once") return core.nondeterminism(stepId, `a ${recorded.kind === "run" ? "step.run" : recorded.kind} step`, "a step.transact");
    if (recorded.status === "failed" && recorded.error?.name === "CancelledError") core.cancellation.markDelivered();
    const turn = recorded.seq !== undefined ? scope.order.turn(stepId) : undefined;
    if (turn) await turn;
    core.emit({ stepId, kind: "run", outcome: "replayed", attempt: recorded.attempts });
    return transactResultOf<T>(recorded);
  }
  if (o.replayOnly) return core.frontier(scope, stepId, "run");
  // Until its record is written, this scope's recorded results above a hole wait (delivery-order.ts).
  const recording = scope.order.running();
  const policy = resolveRetry(options?.retries, o.workflow.retry);
  const timeoutMs = options?.timeout === undefined ? undefined : parseDuration(options.timeout);
  const prior = o.journal.attempts(stepId);
  const last = prior.at(-1);
  const cancelHere = core.cancelStops();
  if (!cancelHere && last && last.retryAt > o.now()) return core.retryAt(scope, stepId, last.retryAt);
  if (!cancelHere && o.shouldYield?.()) return core.continueNow(scope, stepId, "continue");

  core.inflight++;
  let seq: number | undefined;
  const exactlyOnce = { semantics: "exactly-once" as const };
  const finalRecord = (fields: Omit<Unstamped<RunStepRecord>, "type" | "kind" | "stepId" | "seq" | "semantics">): Unstamped<RunStepRecord> => {
    seq ??= scope.order.take(stepId);
    return { type: "step", kind: "run", stepId, ...fields, seq, ...exactlyOnce };
  };
  const fail = async (error: unknown, attempts: number, startedAt: number): Promise<T> => {
    const { record } = await core.write<RunStepRecord>(finalRecord({ status: "failed", error: serializeError(error), attempts, startedAt }));
    recording?.();
    return deliver<T>(scope, record, "failed");
  };
  try {
    for (let attempt = prior.length + 1; ; attempt++) {
      if (!core.ownsLease()) return never();
      const startedAt = o.now();
      if (core.cancelStops()) {
        core.cancellation.markDelivered();
        return await fail(core.cancellation.error(), attempt, startedAt);
      }
      let value: T;
      let ops: TxOp[];
      try {
        const built = collectWrites(stepId);
        const run = () => runAttempt(`${core.journalId}/${stepId}`, stepId, (ctx) => core.bodies.run((c) => body(built.tx, c), ctx), attempt, timeoutMs, core.cancellation.signal, core.timers);
        const around = o.aroundAttempt;
        value = around ? await around({ runId: o.runId, workflow: o.workflow.name, stepId, attempt }, run) : await run();
        built.seal();
        ops = built.ops;
        assertJsonSafe(value, `result of step "${stepId}"`);
        const size = jsonBytes(value);
        const limit = o.maxValueBytes ?? DEFAULT_MAX_VALUE_BYTES;
        if (size > limit) throw new ValueTooLargeError(`the result of step "${stepId}"`, size, limit, "journal");
        validateWrites(stepId, ops);
        if (!o.transact) throw new TransactUnsupportedError(stepId);
      } catch (err) {
        if (err instanceof CancelledError) core.cancellation.markDelivered();
        const retryAt = err instanceof CancelledError ? undefined : nextRetryAt(policy, err, attempt, o.now(), `${core.journalId}/${stepId}`);
        if (retryAt === undefined) return await fail(err, attempt, startedAt);
        if (!(await retryLater(scope, stepId, attempt, err, retryAt, startedAt, seq !== undefined))) return never();
        if (seq === undefined && retryAt > o.now()) return core.retryAt(scope, stepId, retryAt);
        continue;
      }
      // The transaction: the user's writes and this record, or neither.
      const record = core.stamp(finalRecord({ status: "ok", result: value, attempts: attempt, startedAt })) as RunStepRecord;
      let answer;
      try {
        answer = await o.transact(record, ops);
      } catch (err) {
        if (err instanceof TransactConflictError) {
          const retryAt = nextRetryAt(policy, err, attempt, o.now(), `${core.journalId}/${stepId}`);
          if (retryAt === undefined) return await fail(err, attempt, startedAt);
          if (!(await retryLater(scope, stepId, attempt, err, retryAt, startedAt, true))) return never();
          continue;
        }
        if (err instanceof TransactValidationError || err instanceof UnsupportedExpressionError || err instanceof TransactUnsupportedError) return await fail(err, attempt, startedAt);
        // The journal could not be written: the invocation ends; the wake is retried.
        core.abort(err, false);
        return never();
      }
      if ("refused" in answer) {
        const op = ops[answer.refused.index];
        const key = op ? keyOfOp(op, op.op === "put" ? undefined : Object.keys(op.key)) : undefined;
        const error = new TransactConditionFailedError(stepId, answer.refused.index, op?.table ?? "?", op?.op ?? "?", answer.refused.reason, key);
        return await fail(error, attempt, startedAt);
      }
      if (!answer.won) {
        // Another invocation recorded this step first: it executes this run (as `write` fences).
        core.abort(new LeaseLostError(o.runId, `another invocation recorded "step#${stepId}" first`), true);
        return never();
      }
      recording?.();
      return await deliver<T>(scope, answer.record, "completed");
    }
  } finally {
    core.inflight--;
    core.checkQuiescent();
  }
}

/**
 * Journals a failed attempt that will be retried at `retryAt`. Once the step's delivery position
 * is taken (`inProcess`), the wait happens here rather than by suspending. False: the execution ended.
 */
async function retryLater(scope: Scope, stepId: string, attempt: number, err: unknown, retryAt: number, startedAt: number, inProcess: boolean): Promise<boolean> {
  const core = scope.core;
  await core.write<AttemptRecord>({ type: "attempt", stepId, attempt, error: serializeError(err), retryAt, startedAt });
  core.emit({ stepId, kind: "run", outcome: "retrying", attempt, durationMs: core.o.now() - startedAt });
  const wait = retryAt - core.o.now();
  if (inProcess && wait > 0) await new Promise<void>((resolve) => core.timers.after(wait, resolve));
  return !core.done;
}

async function deliver<T>(scope: Scope, record: JournalRecord, outcome: "completed" | "failed"): Promise<T> {
  const core = scope.core;
  if (record.type !== "step" || record.kind !== "run") throw new TypeError("not a run record");
  const turn = scope.order.turn(record.stepId);
  if (turn) await turn;
  core.emit({ stepId: record.stepId, kind: "run", outcome, attempt: record.attempts, durationMs: core.o.now() - record.startedAt });
  return transactResultOf<T>(record);
}

/** A transact step's result, or its failure as the same class live and on replay. */
export function transactResultOf<T>(record: RunStepRecord): T {
  if (record.status === "ok") return record.result as T;
  const e = record.error ?? { name: "Error", message: "unknown failure" };
  const f = (e.fields ?? {}) as Record<string, unknown>;
  const str = (k: string) => String(f[k] ?? "");
  switch (e.name) {
    case "TransactConditionFailedError":
      throw new TransactConditionFailedError(record.stepId, Number(f.index ?? -1), str("table"), str("op"), str("reason"), f.key as Record<string, unknown> | undefined);
    case "TransactValidationError":
      throw new TransactValidationError(record.stepId, str("problem"));
    case "UnsupportedExpressionError":
      throw new UnsupportedExpressionError(str("expression"), str("problem"));
    case "TransactUnsupportedError":
      throw new TransactUnsupportedError(record.stepId);
    case "CancelledError":
      throw new CancelledError(String(f.reason ?? "cancelled"));
    default:
      throw new StepFailedError(record.stepId, record.attempts, e);
  }
}
