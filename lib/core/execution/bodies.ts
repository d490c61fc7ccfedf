/**
 * User step functions still running, counted until their own promise settles: a step stopped by
 * its timeout or the run's cancellation stops waiting for its function, which may go on. A run's
 * flow-control slot is handed on only once none runs (engine-slot.ts).
 */
import { isThenable } from "../attempt.ts";
import type { Timers } from "../../ports.ts";

export class StepBodies {
  /** Functions running now. */
  count = 0;
  private readonly idle: Array<() => void> = [];

  constructor(private readonly timers: Timers) {}

  /**
   * Runs a user step function on `arg`, counted until its promise settles. A function that returns
   * without a promise is done when it returns: its value is handed back as it is (runAttempt's
   * fast path).
   */
  run<A, T>(fn: (arg: A) => Promise<T> | T, arg: A): Promise<T> | T {
    this.count++;
    let value: Promise<T> | T;
    try {
      value = fn(arg);
    } catch (err) {
      this.done();
      throw err;
    }
    if (!isThenable(value)) {
      this.done();
      return value;
    }
    const running = Promise.resolve(value);
    running.then(this.done, this.done);
    return running;
  }

  /** Resolves true once no user step function runs, or false after `ms`. */
  settled(ms: number): Promise<boolean> {
    if (this.count === 0) return Promise.resolve(true);
    return new Promise<boolean>((resolve) => {
      const cancel = this.timers.after(ms, () => resolve(false));
      this.idle.push(() => {
        cancel();
        resolve(true);
      });
    });
  }

  private readonly done = (): void => {
    if (--this.count === 0) for (const wake of this.idle.splice(0)) wake();
  };
}
