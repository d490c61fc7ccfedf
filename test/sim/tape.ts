/**
 * Every choice the simulator makes comes from one tape of numbers: which task runs next, which
 * write loses its answer, when a worker dies, how far the clock jumps. A seed fills the tape from
 * a PRNG as the run draws from it; a recorded tape replays the same run exactly. Past its end a
 * fixed tape reads 0, and 0 is always the plain choice (the oldest task, no fault, no event), so
 * shrinking a failing tape towards zeros shortens the story it tells.
 */
import { mulberry32 } from "../../lib/core/random.ts";

export class Tape {
  /** Every value drawn so far, in order: the tape to replay or shrink. */
  readonly drawn: number[] = [];
  private readonly random: (() => number) | undefined;
  private readonly fixed: readonly number[] | undefined;

  private constructor(seed: number | undefined, fixed: readonly number[] | undefined) {
    this.random = seed === undefined ? undefined : mulberry32(seed);
    this.fixed = fixed;
  }

  /** A tape drawn from `seed`. */
  static fromSeed(seed: number): Tape {
    return new Tape(seed, undefined);
  }

  /** A recorded (or shrunk) tape; it reads 0 past its end. */
  static fixed(values: readonly number[]): Tape {
    return new Tape(undefined, values);
  }

  /** An integer in [0, n); 0 is the plain choice. A draw from fewer than two options takes nothing. */
  next(n: number): number {
    if (n <= 1) return 0;
    let value: number;
    if (this.fixed) value = (this.fixed[this.drawn.length] ?? 0) % n;
    else value = Math.floor((this.random as () => number)() * n);
    this.drawn.push(value);
    return value;
  }

  /** True with probability `p` (in thousandths); false when the tape says 0. */
  chance(p: number): boolean {
    const threshold = Math.round(p * 1000);
    if (threshold <= 0) return false;
    return this.next(1000) >= 1000 - threshold;
  }

  /** A number in [lo, hi], 0 on the tape meaning `lo`. */
  between(lo: number, hi: number): number {
    return lo + this.next(hi - lo + 1);
  }
}

/** A tape as one line of text (run-length for zeros), for a failure report and `--tape`. */
export function encodeTape(values: readonly number[]): string {
  const out: string[] = [];
  let zeros = 0;
  const flush = () => {
    if (zeros > 0) out.push(zeros === 1 ? "0" : `0*${zeros}`);
    zeros = 0;
  };
  for (const v of values) {
    if (v === 0) zeros++;
    else {
      flush();
      out.push(String(v));
    }
  }
  flush();
  return out.join(",");
}

export function decodeTape(text: string): number[] {
  const values: number[] = [];
  for (const part of text.split(",").map((p) => p.trim()).filter(Boolean)) {
    const m = /^0\*(\d+)$/.exec(part);
    if (m) for (let i = 0; i < Number(m[1]); i++) values.push(0);
    else if (/^\d+$/.test(part)) values.push(Number(part));
    else throw new Error(`not a tape: ${part}`);
  }
  return values;
}
