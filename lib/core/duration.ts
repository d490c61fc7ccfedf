/** A duration: milliseconds, or text like `"500ms"`, `"30s"`, `"10m"`, `"24h"`, `"7d"`. */
export type Duration = number | `${number}${"ms" | "s" | "m" | "h" | "d"}`;

const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const PATTERN = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)$/;

/**
 * Milliseconds in a {@link Duration}. Throws `TypeError` on anything else.
 *
 * @example
 * ```ts
 * parseDuration("10m"); // 600000
 * ```
 */
export function parseDuration(value: Duration | string): number {
  if (typeof value === "number") {
    if (!Number.isFinite(value) || value < 0) throw new TypeError(`invalid duration ${value}: expected a non-negative number of ms`);
    return Math.round(value);
  }
  const m = PATTERN.exec(String(value).trim());
  if (!m) throw new TypeError(`invalid duration "${String(value)}": expected e.g. "500ms", "30s", "10m", "24h", "7d"`);
  return Math.round(Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS]);
}
