/** Timing helpers for the benchmarks: repeat a measurement, keep median, min and max. */

export interface Sample {
  median: number;
  min: number;
  max: number;
  runs: number;
}

export interface MeasureOptions {
  /** Measured repetitions. Default 7. */
  runs?: number;
  /** Unmeasured repetitions first (JIT, caches, file growth). Default 2. */
  warmup?: number;
}

/**
 * Runs `fn` `warmup` times unmeasured, then `runs` times, and summarises what each call
 * returned: a number it measured itself (the part that matters, e.g. without setup), in ms.
 *
 * @example
 * ```ts
 * const s = await repeat(() => timed(() => work()));
 * console.log(s.median);
 * ```
 */
export async function repeat(fn: () => Promise<number>, options: MeasureOptions = {}): Promise<Sample> {
  const runs = options.runs ?? 7;
  for (let i = 0; i < (options.warmup ?? 2); i++) await fn();
  const values: number[] = [];
  for (let i = 0; i < runs; i++) values.push(await fn());
  return summarise(values);
}

/** Milliseconds `fn` took. */
export async function timed(fn: () => Promise<unknown> | unknown): Promise<number> {
  const t0 = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - t0) / 1e6;
}

export function summarise(values: readonly number[]): Sample {
  if (values.length === 0) throw new RangeError("no samples");
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  const median = sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  return { median, min: sorted[0]!, max: sorted[sorted.length - 1]!, runs: sorted.length };
}

/** Divides every figure of a sample (e.g. total ms by 1,000 steps). */
export function per(sample: Sample, n: number): Sample {
  return { median: sample.median / n, min: sample.min / n, max: sample.max / n, runs: sample.runs };
}

/** A plain text table; the first column is left-aligned, the others right-aligned. */
export function table(header: readonly string[], rows: ReadonlyArray<readonly string[]>): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: readonly string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ").trimEnd();
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)].join("\n");
}

/** `0.0421` → "0.042", `812.3` → "812". Three significant digits, enough for noisy figures. */
export function fmt(ms: number): string {
  if (ms >= 100) return ms.toFixed(0);
  if (ms >= 10) return ms.toFixed(1);
  if (ms >= 1) return ms.toFixed(2);
  return ms.toPrecision(3);
}
