/**
 * Errors of the AWS adapters. Like the core's, each has a literal `name` and says whether
 * retrying can help.
 */
import type { AttributeValue } from "@aws-sdk/client-dynamodb";
import { WaymarkError } from "../core/errors.ts";

/** DynamoDB's item size limit: 400 KB, attribute names included. */
export const DYNAMODB_ITEM_LIMIT_BYTES = 400 * 1024;

/**
 * A journal item would exceed DynamoDB's 400 KB item limit. Nothing was written. `key` is the
 * record key (`step#charge`), or `meta` for the run's own item (a huge input or result).
 *
 * @example
 * ```ts
 * try {
 *   await store.appendRecord(runId, { key: "step#render", body: bigReport });
 * } catch (err) {
 *   if (err instanceof RecordTooLargeError) console.error(err.key, err.sizeBytes);
 * }
 * ```
 */
export class RecordTooLargeError extends WaymarkError {
  override readonly name = "RecordTooLargeError" as const;
  readonly retryable = false;
  readonly limitBytes = DYNAMODB_ITEM_LIMIT_BYTES;
  constructor(
    readonly runId: string,
    readonly key: string,
    /** The item's size as DynamoDB counts it (attribute names and values, UTF-8). */
    readonly sizeBytes: number,
  ) {
    super(
      `run "${runId}": record "${key}" is ${sizeBytes} bytes, over DynamoDB's item limit of ${DYNAMODB_ITEM_LIMIT_BYTES} bytes; ` +
        "return a smaller value from the step (store large payloads in S3 and journal their key)",
    );
  }
}

/**
 * An SQS message body that is not a Waymark wake (see `parseWakeMessage`). Not retryable: let
 * the message go to the DLQ rather than fail the batch for ever.
 *
 * @example
 * ```ts
 * try {
 *   await engine.invoke(parseWakeMessage(record.body).runId);
 * } catch (err) {
 *   if (err instanceof MalformedWakeError) log.error(err.problem);
 * }
 * ```
 */
export class MalformedWakeError extends WaymarkError {
  override readonly name = "MalformedWakeError" as const;
  readonly retryable = false;
  constructor(readonly problem: string) {
    super(`not a Waymark wake message: ${problem}`);
  }
}

/**
 * EventBridge Scheduler throttled `CreateSchedule` or `DeleteSchedule` beyond the SDK's own
 * retries. Retry later (the engine's invocation fails and its wake is redelivered).
 *
 * @example
 * ```ts
 * await wakes.schedule(wake).catch((err) => {
 *   if (err instanceof ScheduleThrottledError) return reportBatchItemFailure(record);
 *   throw err;
 * });
 * ```
 */
export class ScheduleThrottledError extends WaymarkError {
  override readonly name = "ScheduleThrottledError" as const;
  readonly retryable = true;
  constructor(
    readonly scheduleName: string,
    override readonly cause: unknown,
  ) {
    super(`EventBridge Scheduler throttled schedule "${scheduleName}"; retry later`);
  }
}

/**
 * A run's meta item kept changing under a conditional write that reads the item it was refused
 * by and tries the transition it calls for (marking a run due: other writers' leases and
 * releases in between). Retryable: the caller's request (a signal, a cancel, a child's end) fails
 * and is sent again; never left as if the write had happened.
 *
 * @example
 * ```ts
 * try {
 *   await client.signal("order-8472", "approval", { approved: true });
 * } catch (err) {
 *   // The run's meta item kept changing while the signal marked it due: send the signal again.
 *   if (err instanceof ContendedWriteError) await client.signal("order-8472", "approval", { approved: true });
 *   else throw err;
 * }
 * ```
 */
export class ContendedWriteError extends WaymarkError {
  override readonly name = "ContendedWriteError" as const;
  readonly retryable = true;
  constructor(
    readonly runId: string,
    readonly tries: number,
  ) {
    super(`run "${runId}": its meta item changed under ${tries} tries to mark it due; retry`);
  }
}

/** DynamoDB refused a conditional write; `Item` is the item as it was (ReturnValuesOnConditionCheckFailure). */
export function conditionFailed(err: unknown): err is { Item?: Record<string, AttributeValue> } {
  return isErrorNamed(err, "ConditionalCheckFailedException");
}

/** DynamoDB's own size refusal of an item (our estimate undercounted) as the same clear error; any other error as it is. */
export function sizeRefusal(err: unknown, runId: string, key: string, size: number): unknown {
  const tooBig = isErrorNamed(err, "ValidationException") && /maximum allowed size/i.test((err as Error).message);
  return tooBig ? new RecordTooLargeError(runId, key, size) : err;
}

/** True when `err` is an AWS SDK error of this name (SDK errors carry the error code in `name`). */
export function isErrorNamed(err: unknown, name: string): boolean {
  return typeof err === "object" && err !== null && (err as { name?: unknown }).name === name;
}

/**
 * Invoking a child's function failed: the function threw (Lambda's `FunctionError`), or it
 * answered with something that is not a Waymark answer. Retryable: the start is idempotent, and
 * the parent's `start` step retries it.
 *
 * @example
 * ```ts
 * try {
 *   await remote.start({ workflow: "payment", runId, input });
 * } catch (err) {
 *   if (err instanceof ChildInvokeError) console.error(err.functionName, err.message);
 * }
 * ```
 */
export class ChildInvokeError extends WaymarkError {
  override readonly name = "ChildInvokeError" as const;
  readonly retryable = true;
  constructor(
    readonly functionName: string,
    problem: string,
  ) {
    super(`invoking child function ${functionName}: ${problem}`);
  }
}
