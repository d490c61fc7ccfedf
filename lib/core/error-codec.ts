/**
 * Errors to and from the journal. A failure recorded in one invocation is rethrown on replay as
 * the same value: Waymark's own classes are rebuilt, anything else becomes a {@link RecordedError}
 * with the original name, message and fields.
 */
import { NonRetryableError, type SerializedError, StepFailedError, WaymarkError } from "./errors.ts";

const BASE_KEYS = new Set(["name", "message", "stack", "retryable"]);

/** Turns any thrown value into the journal's form. */
export function serializeError(err: unknown): SerializedError {
  if (err instanceof StepFailedError) {
    return { name: err.name, message: err.message, fields: { stepId: err.stepId, attempts: err.attempts, failure: err.failure } };
  }
  if (err instanceof Error) {
    const fields: Record<string, unknown> = {};
    const own = err instanceof NonRetryableError ? { ...err.fields } : {};
    for (const [k, v] of Object.entries(err)) {
      if (BASE_KEYS.has(k) || k === "fields") continue;
      own[k] = v;
    }
    for (const [k, v] of Object.entries(own)) {
      const safe = jsonSafe(v);
      if (safe !== undefined) fields[k] = safe;
    }
    const out: SerializedError = { name: typeof err.name === "string" ? err.name : "Error", message: String(err.message) };
    if (Object.keys(fields).length > 0) out.fields = fields;
    // The record's format takes a string (records.ts): any other `stack` a thrower set is left out.
    if (typeof err.stack === "string" && err.stack) out.stack = err.stack;
    return out;
  }
  return { name: "NonErrorThrown", message: safeString(err) };
}

function jsonSafe(v: unknown): unknown {
  try {
    const text = JSON.stringify(v);
    return text === undefined ? undefined : JSON.parse(text);
  } catch {
    return undefined;
  }
}

function safeString(v: unknown): string {
  try {
    return typeof v === "string" ? v : JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}

/** An error rebuilt from the journal whose class is the user's own: same name, message, fields. */
export class RecordedError extends Error {
  override readonly name: string;
  readonly fields: Record<string, unknown>;
  constructor(s: SerializedError) {
    super(s.message);
    this.name = s.name;
    this.fields = s.fields ?? {};
    Object.assign(this, this.fields);
    if (s.stack) this.stack = s.stack;
  }
}

/** Rebuilds the error a run or step failed with, so replay throws what the live run threw. */
export function deserializeError(s: SerializedError): Error {
  if (s.name === "StepFailedError" && s.fields) {
    const f = s.fields as { stepId: string; attempts: number; failure: SerializedError };
    return new StepFailedError(f.stepId, f.attempts, f.failure);
  }
  return new RecordedError(s);
}

/** True for errors that carry `retryable: false`. */
export function isRetryable(err: unknown): boolean {
  if (err instanceof WaymarkError) return err.retryable;
  return true;
}
