/**
 * Durations and moments, bounded where they enter: every sleep, timeout, deadline, retry delay,
 * debounce or rate period is at most {@link MAX_DURATION_MS} (one year, as the longest run of AWS
 * Step Functions), so every time Waymark stores is a valid date for JavaScript, DynamoDB and the
 * Scheduler alike. Anything else is an {@link InvalidDurationError}, before anything is written.
 */
import { InvalidDurationError } from "./errors.ts";

/** A duration: milliseconds, or text like `"500ms"`, `"30s"`, `"10m"`, `"24h"`, `"7d"`. */
export type Duration = number | `${number}${"ms" | "s" | "m" | "h" | "d"}`;

/** The longest duration accepted anywhere: 365 days. */
export const MAX_DURATION_MS = 365 * 86_400_000;

const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const PATTERN = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)$/;

/**
 * Milliseconds in a {@link Duration}, from 0 to {@link MAX_DURATION_MS}. Throws
 * `InvalidDurationError` on anything else (not retryable: the code or its input is wrong).
 *
 * @example
 * ```ts
 * parseDuration("10m"); // 600000
 * parseDuration("2y"); // throws InvalidDurationError
 * ```
 */
export function parseDuration(value: Duration | string): number {
  let ms: number;
  if (typeof value === "number") {
    if (!Number.isFinite(value) || value < 0) throw new InvalidDurationError(value, "expected a non-negative, finite number of ms");
    ms = Math.round(value);
  } else {
    const m = PATTERN.exec(String(value).trim());
    if (!m) throw new InvalidDurationError(value, 'expected e.g. "500ms", "30s", "10m", "24h", "7d"');
    ms = Math.round(Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS]);
  }
  if (ms > MAX_DURATION_MS) throw new InvalidDurationError(value, `longer than the longest Waymark accepts (${MAX_DURATION_MS / 86_400_000} days)`);
  return ms;
}

/**
 * A moment to wait until (`step.sleepUntil`): a finite epoch-ms time, at most
 * {@link MAX_DURATION_MS} after `now` (a moment already past is fine: the sleep ends at once).
 *
 * @example
 * ```ts
 * checkMoment(Date.parse("2027-01-01"), Date.now()); // the same number, or InvalidDurationError
 * ```
 */
export function checkMoment(at: number, now: number): number {
  if (typeof at !== "number" || !Number.isFinite(at)) throw new InvalidDurationError(at, "not a valid time");
  if (at - now > MAX_DURATION_MS) throw new InvalidDurationError(new Date(at).toISOString(), `more than ${MAX_DURATION_MS / 86_400_000} days away`);
  return at;
}
