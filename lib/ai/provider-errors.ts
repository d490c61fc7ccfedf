/**
 * A provider's failure turned into Waymark's retry meaning, small enough to journal. An
 * `APICallError` carries the whole request body; the journal gets status, address and verdict.
 */
import type { APICallError } from "@ai-sdk/provider";
import { RetryAfterError } from "../core/errors.ts";
import { ModelCallError } from "./errors.ts";

/**
 * `APICallError.isInstance`, without loading `@ai-sdk/provider`: the SDK marks its errors with a
 * registered symbol, the same in provider 3.x and 4.x and across copies of the package.
 */
const API_CALL_ERROR = Symbol.for("vercel.ai.error.AI_APICallError");

function isApiCallError(err: unknown): err is APICallError {
  return typeof err === "object" && err !== null && (err as Record<symbol, unknown>)[API_CALL_ERROR] === true;
}

export function toStepError(err: unknown, now: number): unknown {
  if (!isApiCallError(err)) return err;
  const url = err.url.split("?")[0] ?? err.url;
  const message = `${err.statusCode ?? "no status"} from ${url}: ${err.message}`;
  const after = err.isRetryable ? retryAfterMs(err.responseHeaders, now) : undefined;
  if (after !== undefined) return new RetryAfterError(message, { after });
  return new ModelCallError(message, err.isRetryable, err.statusCode, url);
}

/** `retry-after-ms`, or `retry-after` in seconds or as an HTTP date. */
function retryAfterMs(headers: Record<string, string> | undefined, now: number): number | undefined {
  if (!headers) return undefined;
  const lower = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
  const ms = Number(lower["retry-after-ms"]);
  if (lower["retry-after-ms"] !== undefined && Number.isFinite(ms) && ms >= 0) return ms;
  const value = lower["retry-after"];
  if (value === undefined) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
