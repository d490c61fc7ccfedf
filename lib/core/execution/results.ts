/** How a recorded step reads back (live and on replay alike), and a store's size refusal. */
import { CancelledError, StepFailedError, StepInterruptedError } from "../errors.ts";
import type { JournalRecord } from "../records.ts";

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
