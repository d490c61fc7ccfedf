/**
 * Time and timers, as ports, so that tests and the simulator own them (part of the ports, `lib/ports.ts`).
 */
/** Time, so tests can skip it. */
export interface Clock {
  now(): number;
}

/** The clock of the machine (`Date.now()`). */
export const systemClock: Clock = { now: () => Date.now() };

/**
 * Timers, so that a simulator can own them: everything the engine schedules for later (a
 * heartbeat, a deadline, a step's timeout, the check that an execution has gone quiet) goes
 * through this port. The system's are Node's timers, unref'd so they never keep a process alive.
 */
export interface Timers {
  /** Calls `fn` once after `ms` (on the engine's clock); returns how to cancel it. */
  after(ms: number, fn: () => void): () => void;
  /** Calls `fn` after the promise callbacks queued now have run (a macrotask: `setImmediate`). */
  defer(fn: () => void): void;
}

/** Timers on the machine's `setTimeout` (unref'd, so they do not keep a process alive). */
export const systemTimers: Timers = {
  after(ms, fn) {
    const timer = setTimeout(fn, Math.max(0, ms));
    timer.unref?.();
    return () => clearTimeout(timer);
  },
  defer(fn) {
    setImmediate(fn);
  },
};
