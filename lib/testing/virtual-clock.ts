import type { Clock } from "../ports.ts";

/**
 * A clock that moves only when told to, for tests that skip hours in milliseconds.
 *
 * @example
 * ```ts
 * const clock = new VirtualClock(Date.parse("2026-01-01T00:00:00Z"));
 * clock.advance(60_000);
 * ```
 */
export class VirtualClock implements Clock {
  constructor(private current: number = Date.UTC(2026, 0, 1)) {}

  now(): number {
    return this.current;
  }

  /** Moves forward by `ms` (never backward). */
  advance(ms: number): void {
    if (!(ms >= 0)) throw new RangeError(`cannot advance a clock by ${ms} ms`);
    this.current += ms;
  }

  /** Moves forward to `at`; earlier times are ignored (time never runs backward). */
  setTo(at: number): void {
    this.current = Math.max(this.current, at);
  }
}
