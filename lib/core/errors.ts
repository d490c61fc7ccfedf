/**
 * Waymark's errors. Every class has a literal `name` (a minifying bundler mangles
 * `constructor.name`) and says whether retrying can help (`retryable`).
 *
 * Errors cross the journal as {@link SerializedError}: name, message, and the error's own
 * JSON-safe fields. Replay rebuilds the same error from the record, so live and replayed
 * executions throw identical values.
 */

import { parseDuration, type Duration } from "./duration.ts";

/** An error as the journal keeps it. */
export interface SerializedError {
  name: string;
  message: string;
  /** The error's own enumerable, JSON-safe fields (e.g. `code`, `retryAt`). */
  fields?: Record<string, unknown>;
  stack?: string;
}

/** Base class of every error Waymark throws. */
export abstract class WaymarkError extends Error {
  abstract override readonly name: string;
  /** Whether doing the same thing again can succeed. */
  abstract readonly retryable: boolean;
}

/**
 * Thrown by a step to stop retrying at once: the step fails with {@link StepFailedError}.
 *
 * @example
 * ```ts
 * await step.run("charge", async () => {
 *   const res = await payments.charge(order);
 *   if (res.declined) throw new NonRetryableError("card declined", { code: res.code });
 *   return res.id;
 * });
 * ```
 */
export class NonRetryableError extends WaymarkError {
  override readonly name = "NonRetryableError" as const;
  readonly retryable = false;
  readonly fields: Record<string, unknown>;
  constructor(message: string, fields: Record<string, unknown> = {}) {
    super(message);
    this.fields = fields;
  }
}

/**
 * Thrown by a step to be retried no earlier than a given time (a provider's `Retry-After`).
 * The attempt still counts against the step's attempts.
 *
 * @example
 * ```ts
 * if (res.status === 429) throw new RetryAfterError("rate limited", { after: "30s" });
 * ```
 */
export class RetryAfterError extends WaymarkError {
  override readonly name = "RetryAfterError" as const;
  readonly retryable = true;
  /** Either an absolute time (epoch ms) or a delay in ms from the failure. */
  readonly retryAt: number | undefined;
  readonly retryAfterMs: number | undefined;
  constructor(message: string, when: { at: Date } | { after: Duration }) {
    super(message);
    if ("at" in when) {
      this.retryAt = when.at.getTime();
      this.retryAfterMs = undefined;
    } else {
      this.retryAt = undefined;
      this.retryAfterMs = parseDuration(when.after);
    }
  }
}

/**
 * The workflow's code no longer matches its journal (a step renamed, removed, reordered or of
 * another kind). The run fails loudly rather than executing a different story.
 */
export class NonDeterminismError extends WaymarkError {
  override readonly name = "NonDeterminismError" as const;
  readonly retryable = false;
  constructor(
    readonly stepId: string,
    readonly expected: string,
    readonly found: string,
  ) {
    super(`non-determinism at step "${stepId}": the journal has ${expected}, the code ${found}`);
  }
}

/**
 * A step's retries are spent (or it threw {@link NonRetryableError}). Catch it in the workflow
 * to run compensations.
 *
 * @example
 * ```ts
 * try {
 *   await step.run("charge", () => payments.charge(order));
 * } catch (err) {
 *   if (err instanceof StepFailedError) await step.run("release", () => inventory.release(hold));
 *   throw err;
 * }
 * ```
 */
export class StepFailedError extends WaymarkError {
  override readonly name = "StepFailedError" as const;
  readonly retryable = false;
  constructor(
    readonly stepId: string,
    readonly attempts: number,
    /** The last attempt's error, as journaled. */
    readonly failure: SerializedError,
  ) {
    super(`step "${stepId}" failed after ${attempts} attempt${attempts === 1 ? "" : "s"}: ${failure.name}: ${failure.message}`);
  }
}

/** A step attempt ran past its `timeout`; counts as a failed attempt. */
export class StepTimeoutError extends WaymarkError {
  override readonly name = "StepTimeoutError" as const;
  readonly retryable = true;
  constructor(
    readonly stepId: string,
    readonly timeoutMs: number,
  ) {
    super(`step "${stepId}" timed out after ${timeoutMs} ms`);
  }
}

/** A value that must be journaled does not survive a JSON round trip. */
export class SerializationError extends WaymarkError {
  override readonly name = "SerializationError" as const;
  readonly retryable = false;
  constructor(
    readonly path: string,
    readonly reason: string,
  ) {
    super(`value at ${path} cannot be journaled: ${reason}`);
  }
}

/** Input (of a run or a signal) failed its schema. Nothing was written. */
export class InvalidInputError extends WaymarkError {
  override readonly name = "InvalidInputError" as const;
  readonly retryable = false;
  constructor(
    message: string,
    /** The schema's issues: path and message of each. */
    readonly issues: ReadonlyArray<{ path: string; message: string }>,
  ) {
    super(`${message}: ${issues.map((i) => `${i.path || "(root)"}: ${i.message}`).join("; ")}`);
  }
}

/**
 * The same run id was started with a different workflow or input, or as a child of another
 * parent, or as a child when a client had started it.
 */
export class RunConflictError extends WaymarkError {
  override readonly name = "RunConflictError" as const;
  readonly retryable = false;
  constructor(
    readonly runId: string,
    /** What conflicts, when it is not the workflow or the input. */
    why = "with a different workflow or input",
  ) {
    super(`run "${runId}" already exists ${why}`);
  }
}

/** No run has this id. */
export class RunNotFoundError extends WaymarkError {
  override readonly name = "RunNotFoundError" as const;
  readonly retryable = false;
  constructor(readonly runId: string) {
    super(`run "${runId}" does not exist`);
  }
}

/** The run has finished (completed, failed or cancelled) and takes no more signals. */
export class RunFinishedError extends WaymarkError {
  override readonly name = "RunFinishedError" as const;
  readonly retryable = false;
  constructor(
    readonly runId: string,
    readonly status: string,
  ) {
    super(`run "${runId}" is ${status}`);
  }
}

/** No workflow of this name is registered in this process (a deploy mismatch is retryable). */
export class UnknownWorkflowError extends WaymarkError {
  override readonly name = "UnknownWorkflowError" as const;
  readonly retryable = true;
  constructor(readonly workflow: string) {
    super(`no workflow named "${workflow}" is registered here`);
  }
}

/** The workflow does not declare a signal of this name. */
export class UnknownSignalError extends WaymarkError {
  override readonly name = "UnknownSignalError" as const;
  readonly retryable = false;
  constructor(
    readonly workflow: string,
    readonly signal: string,
  ) {
    super(`workflow "${workflow}" declares no signal "${signal}"`);
  }
}

/** A signal targeted a wait that does not exist in the run. */
export class WaitNotFoundError extends WaymarkError {
  override readonly name = "WaitNotFoundError" as const;
  readonly retryable = false;
  constructor(
    readonly runId: string,
    readonly waitId: string,
  ) {
    super(`run "${runId}" has no wait "${waitId}"`);
  }
}

/** The decision a wait was resolved with. */
export type WaitDecision =
  | { via: "signal"; signalId: string; at: number }
  | { via: "timeout"; at: number }
  /** The run's cancellation was delivered at this wait. */
  | { via: "cancelled"; at: number }
  /** A sleep ended early by a wake-now (`client.wake`). */
  | { via: "woken"; at: number };

/**
 * The wait was already resolved (by another signal or by its timeout). The late signal is kept
 * in the journal for audit; `decision` says what won.
 */
export class WaitResolvedError extends WaymarkError {
  override readonly name = "WaitResolvedError" as const;
  readonly retryable = false;
  constructor(
    readonly runId: string,
    readonly waitId: string,
    readonly decision: WaitDecision,
  ) {
    super(`wait "${waitId}" of run "${runId}" was already resolved by ${decision.via === "signal" ? `signal ${decision.signalId}` : decision.via === "cancelled" ? "the run's cancellation" : "its timeout"}`);
  }
}

/** A signal id was reused with a different name or payload. */
export class SignalConflictError extends WaymarkError {
  override readonly name = "SignalConflictError" as const;
  readonly retryable = false;
  constructor(
    readonly runId: string,
    readonly signalId: string,
  ) {
    super(`signal "${signalId}" of run "${runId}" was already delivered with a different name or payload`);
  }
}

/** A journal record this code cannot read (another code version, or corruption). */
export class JournalFormatError extends WaymarkError {
  override readonly name = "JournalFormatError" as const;
  readonly retryable = false;
  constructor(
    readonly runId: string,
    readonly key: string,
    readonly problem: string,
  ) {
    super(`run "${runId}": journal record "${key}" cannot be read by this code: ${problem}`);
  }
}

/**
 * This invocation no longer owns the run: its lease expired by its own clock, a renewal was
 * refused (taken over, or the run cancelled), or another invocation recorded a step first.
 * The invocation ends at once; the owner (or the next wake) carries the run on.
 */
export class LeaseLostError extends WaymarkError {
  override readonly name = "LeaseLostError" as const;
  readonly retryable = true;
  constructor(
    readonly runId: string,
    readonly reason = "another invocation owns it, or it was cancelled",
  ) {
    super(`lost the lease on run "${runId}": ${reason}`);
  }
}

/**
 * The run was cancelled (`client.cancel(runId, { reason })`, or the run passed its `timeout`).
 * Thrown into the workflow at the first point that waits (a sleep, a wait, a retry delay), at
 * the first step it starts, or out of a step whose body was running (its `signal` aborts). The
 * workflow may catch it and run compensation steps, which execute normally; the run then ends
 * `cancelled`, with the reason.
 *
 * @example
 * ```ts
 * try {
 *   await step.waitForSignal("approval", { timeout: "24h" });
 * } catch (err) {
 *   if (err instanceof CancelledError) await step.run("release", () => inventory.release(hold));
 *   throw err;
 * }
 * ```
 */
export class CancelledError extends WaymarkError {
  override readonly name = "CancelledError" as const;
  readonly retryable = false;
  constructor(readonly reason: string) {
    super(`the run was cancelled: ${reason}`);
  }
}

/**
 * A child run (`step.invoke`) failed or was cancelled. Not retryable: the child already ran its
 * course; catch it to compensate, or start another child.
 *
 * @example
 * ```ts
 * try {
 *   await step.invoke("pay", paymentFlow, { input });
 * } catch (err) {
 *   if (err instanceof ChildFailedError) await saga.compensate();
 *   throw err;
 * }
 * ```
 */
export class ChildFailedError extends WaymarkError {
  override readonly name = "ChildFailedError" as const;
  readonly retryable = false;
  constructor(
    readonly childRunId: string,
    readonly status: "failed" | "cancelled",
    /** The child's error, as journaled. */
    readonly failure: SerializedError,
  ) {
    super(`child run "${childRunId}" ${status}: ${failure.name}: ${failure.message}`);
  }
}

/**
 * `client.start` refused a run over its workflow's rate limit (`rateLimit: { onLimit: "reject" }`).
 * Nothing was written. Retryable: try again later.
 *
 * @example
 * ```ts
 * try {
 *   await client.start(notify, { runId, input });
 * } catch (err) {
 *   if (err instanceof RateLimitedError) return respond(429);
 *   throw err;
 * }
 * ```
 */
export class RateLimitedError extends WaymarkError {
  override readonly name = "RateLimitedError" as const;
  readonly retryable = true;
  constructor(
    readonly workflow: string,
    readonly key: string,
  ) {
    super(`workflow "${workflow}": more starts for key "${key}" than its rate limit allows; try again later`);
  }
}

/**
 * An at-most-once step's body was started and never finished (its process died, or froze past its
 * lease): the body is not run again. Thrown into the workflow on every replay, so the workflow can
 * reconcile with the provider (look the operation up by its idempotency key) or compensate.
 *
 * @example
 * ```ts
 * try {
 *   await step.run("wire", ({ idempotencyKey }) => bank.wire(order, idempotencyKey), { semantics: "at-most-once" });
 * } catch (err) {
 *   if (err instanceof StepInterruptedError) await step.run("reconcile", () => bank.lookup(`${step.runId}/wire`));
 *   else throw err;
 * }
 * ```
 */
export class StepInterruptedError extends WaymarkError {
  override readonly name = "StepInterruptedError" as const;
  readonly retryable = false;
  constructor(
    readonly stepId: string,
    /** Attempts whose body started, the interrupted one included. */
    readonly attempts: number,
  ) {
    super(`step "${stepId}" is at-most-once and its attempt ${attempts} started but never finished: not run again`);
  }
}

/**
 * A value Waymark must journal (a step's result, a run's input or result, a signal's payload) is
 * larger than the journal accepts (`maxValueBytes`; DynamoDB's item limit is 400 KB). A step whose
 * result is too large fails once with this error, non-retryable: its body is not run again.
 *
 * @example
 * ```ts
 * // Return a reference instead of the payload itself:
 * const key = await step.run("export", async () => (await s3.put(bigReport)).key);
 * ```
 */
export class ValueTooLargeError extends WaymarkError {
  override readonly name = "ValueTooLargeError" as const;
  readonly retryable = false;
  constructor(
    readonly what: string,
    readonly sizeBytes: number,
    readonly limitBytes: number,
    /** `payloads`: over the hard cap of a runtime that stores large values by reference. */
    readonly cap: "journal" | "payloads" = "journal",
  ) {
    super(
      cap === "payloads"
        ? `${what} is ${sizeBytes} bytes as JSON, over the cap of ${limitBytes} bytes for payloads stored by reference (payloads.maxBytes); return a smaller value, or a reference of your own`
        : `${what} is ${sizeBytes} bytes as JSON, over the journal's limit of ${limitBytes} bytes; store large payloads elsewhere (S3) and journal a reference`,
    );
  }
}

/** A run took more invocations than its budget allows (a runaway self-waking loop). */
export class InvocationBudgetError extends WaymarkError {
  override readonly name = "InvocationBudgetError" as const;
  readonly retryable = false;
  constructor(
    readonly runId: string,
    readonly budget: number,
  ) {
    super(`run "${runId}" exceeded its budget of ${budget} invocations`);
  }
}

/**
 * A duration or moment Waymark does not accept: not a duration, negative, or longer than one
 * year (`MAX_DURATION_MS`), or a moment more than a year away. Not retryable: the code or its input
 * is wrong. Thrown where the value enters (a step's call, `durable()`'s options), before anything
 * is written; in a workflow it fails the run (or the code catches it).
 *
 * @example
 * ```ts
 * await step.sleep("pause", order.delayMs); // InvalidDurationError if delayMs is 8.64e15
 * ```
 */
export class InvalidDurationError extends WaymarkError {
  override readonly name = "InvalidDurationError" as const;
  readonly retryable = false;
  /** The value as given (as text). */
  readonly value: string;
  constructor(value: unknown, reason: string) {
    const text = typeof value === "string" ? value : String(value);
    super(`invalid duration ${JSON.stringify(text).slice(0, 80)}: ${reason}`);
    this.value = text.slice(0, 80);
  }
}

/** Misuse of the step API (bad step name, unknown signal, a step called outside a run). */
export class WorkflowDefinitionError extends WaymarkError {
  override readonly name = "WorkflowDefinitionError" as const;
  readonly retryable = false;
}

/**
 * A `listRuns` cursor a store did not hand out (or from another store or version).
 *
 * @example
 * ```ts
 * await store.listRuns({ cursor: "garbage" }); // throws InvalidCursorError
 * ```
 */
export class InvalidCursorError extends WaymarkError {
  override readonly name = "InvalidCursorError" as const;
  readonly retryable = false;
  constructor(readonly cursor: string) {
    super(`not a run list cursor of a store: ${JSON.stringify(cursor.slice(0, 80))}`);
  }
}
