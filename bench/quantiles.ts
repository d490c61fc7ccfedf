/** Percentiles of a sample, for latency figures (the median alone hides the tail). */

export interface Quantiles {
  p50: number;
  p90: number;
  max: number;
  n: number;
}

/**
 * Nearest-rank percentiles: p90 is the smallest value with at least 90 % of the sample at or below it.
 *
 * @example
 * ```ts
 * const { p50, p90 } = quantiles([120, 80, 95, 1_400]); // p50 95, p90 1400
 * ```
 */
export function quantiles(values: readonly number[]): Quantiles {
  if (values.length === 0) return { p50: Number.NaN, p90: Number.NaN, max: Number.NaN, n: 0 };
  const sorted = [...values].sort((a, b) => a - b);
  const rank = (p: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] ?? Number.NaN;
  return { p50: rank(0.5), p90: rank(0.9), max: sorted[sorted.length - 1] ?? Number.NaN, n: sorted.length };
}
