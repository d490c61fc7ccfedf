/**
 * Moments and durations as people read them, on every page and in the CLI's timeline. Both are
 * total: a stored time comes from a journal (a timeout taken from input, another writer's clock,
 * a hand-edited record), so a value outside JavaScript's date range or not a number at all is
 * shown as such, never thrown (`new Date(8.64e15 + 1).toISOString()` throws a RangeError).
 */

/** The largest distance from the epoch a JavaScript `Date` can hold: ±100,000,000 days. */
export const MAX_INSTANT_MS = 8.64e15;

/** What an instant outside the date range (or not a number) reads as. */
export const INVALID_DATE_TEXT = "invalid date";

/**
 * True when `ms` is an epoch time a `Date` can hold (finite, within ±8.64e15 ms).
 *
 * @example
 * ```ts
 * isInstant(Date.now()); // true
 * isInstant(Date.now() + 8.64e15); // false: a timeout of 100,000,000 days from now
 * ```
 */
export function isInstant(ms: unknown): ms is number {
  return typeof ms === "number" && Number.isFinite(ms) && Math.abs(ms) <= MAX_INSTANT_MS;
}

/**
 * An epoch time as ISO 8601 UTC (`2026-03-01T12:00:00.000Z`), or `"invalid date"`.
 *
 * @example
 * ```ts
 * instantText(0); // "1970-01-01T00:00:00.000Z"
 * instantText(Number.NaN); // "invalid date"
 * ```
 */
export function instantText(ms: unknown): string {
  return isInstant(ms) ? new Date(ms).toISOString() : INVALID_DATE_TEXT;
}

const UNITS: ReadonlyArray<readonly [unit: string, size: number, below: number]> = [
  ["s", 1_000, 60],
  ["min", 60_000, 60],
  ["h", 3_600_000, 24],
];

/**
 * A duration with one rule everywhere: whole milliseconds below a second, then one decimal in
 * the largest of s, min, h, d whose rounded value stays below the next unit — so a one-hour
 * sleep whose record was written a few ms after it was scheduled (3,599,996 ms) reads "1.0 h",
 * never "60.0 min". Empty for a negative (clock skew between writers) or non-finite value.
 *
 * @example
 * ```ts
 * durationText(850); // "850 ms"
 * durationText(59_990); // "1.0 min"
 * durationText(3_599_996); // "1.0 h"
 * durationText(36 * 3_600_000); // "1.5 d"
 * ```
 */
export function durationText(ms: unknown): string {
  if (typeof ms !== "number" || !Number.isFinite(ms) || ms < 0) return "";
  if (Math.round(ms) < 1_000) return `${Math.round(ms)} ms`;
  for (const [unit, size, below] of UNITS) {
    const tenths = Math.round((ms / size) * 10);
    if (tenths < below * 10) return `${(tenths / 10).toFixed(1)} ${unit}`;
  }
  return `${(ms / 86_400_000).toFixed(1)} d`;
}

/**
 * The time from one stored instant to another, by {@link durationText}; empty when either is
 * not a valid instant (their difference would be a made-up duration).
 *
 * @example
 * ```ts
 * elapsedText(record.startedAt, record.at); // "1.2 s"
 * ```
 */
export function elapsedText(from: unknown, to: unknown): string {
  return isInstant(from) && isInstant(to) ? durationText(to - from) : "";
}
