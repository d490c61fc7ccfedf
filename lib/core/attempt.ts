import type { StepRunContext } from "./definition.ts";
import type { CancelSource } from "./cancellation.ts";
import { StepTimeoutError } from "./errors.ts";
import { systemTimers, type Timers } from "../ports.ts";

/** Whether `value` is a promise or another thenable (what `await` would wait for). */
export function isThenable<T>(value: T | PromiseLike<T>): value is PromiseLike<T> {
  return typeof (value as { then?: unknown } | null)?.then === "function";
}

/**
 * Runs one attempt of a step's function. With a timeout, the attempt fails with
 * {@link StepTimeoutError} when it passes and the step's `signal` aborts; when `cancel` aborts
 * (the run was cancelled), the attempt fails with its reason and the step's `signal` aborts too.
 * The function may go on in the background, but its result is ignored.
 *
 * The fast path: the function is called at once, and a value it returns without a promise (it
 * did its work synchronously, so nothing could stop it) is the attempt's result, with no race and
 * no extra turn of the microtask queue. An attempt whose run was already cancelled runs the
 * function a turn later, its signal aborted, and fails at once, as any stopped attempt does.
 */
export async function runAttempt<T>(
  idempotencyKey: string,
  stepId: string,
  fn: (ctx: StepRunContext) => Promise<T> | T,
  attempt: number,
  timeoutMs: number | undefined,
  cancel?: CancelSource,
  timers: Timers = systemTimers,
): Promise<T> {
  return attemptNow(idempotencyKey, stepId, fn, attempt, timeoutMs, cancel, timers);
}

/**
 * {@link runAttempt} without its promise where none is needed: a function that returns a value
 * without a promise, and was not stopped, gives that value back synchronously (the step's hot
 * path: no promise, no turn of the microtask queue). A synchronous throw is thrown; everything
 * else comes back as the promise `runAttempt` would return.
 */
export function attemptNow<T>(
  idempotencyKey: string,
  stepId: string,
  fn: (ctx: StepRunContext) => Promise<T> | T,
  attempt: number,
  timeoutMs: number | undefined,
  cancel: CancelSource | undefined,
  timers: Timers,
): Promise<T> | T {
  const a = new AttemptStop();
  const ctx = new AttemptContext(idempotencyKey, attempt, a);
  const clearTimer = timeoutMs === undefined ? undefined : timers.after(timeoutMs, () => a.stop(new StepTimeoutError(stepId, timeoutMs)));
  if (cancel?.aborted) a.stop(cancel.reason);
  let first: Promise<T> | T;
  try {
    const before = a.stopped();
    if (before) {
      // Cancelled before it began: the function still runs (its signal aborted), its result ignored.
      Promise.resolve()
        .then(() => fn(ctx))
        .catch(() => {});
      throw before.reason;
    }
    first = fn(ctx);
  } catch (err) {
    clearTimer?.();
    throw err;
  }
  if (!isThenable(first)) {
    clearTimer?.();
    const stopped = a.stopped();
    if (stopped) throw stopped.reason;
    return first;
  }
  // Still running: from now on the run's cancellation stops it. Nothing could while the function
  // ran synchronously (a cancellation is learnt from a store's answer or a timer), so a function
  // that returns without a promise never subscribes.
  const unsubscribe = cancel?.subscribe((reason) => a.stop(reason));
  const running = first;
  return new Promise<T>((resolve, reject) => {
    a.whenStopped(reject);
    running.then(resolve, reject);
  }).finally(() => {
    clearTimer?.();
    unsubscribe?.();
  });
}

/** One attempt's stop state: why it was stopped (a timeout, the run's cancellation), and its signal's controller if one was asked for. */
class AttemptStop {
  private controller: AbortController | undefined;
  private stoppedBy: { reason: unknown } | undefined;
  private onStop: ((reason: unknown) => void) | undefined;

  /** Why the attempt was stopped, if it was. */
  stopped(): { reason: unknown } | undefined {
    return this.stoppedBy;
  }

  /** Calls `reject` with the reason once the attempt is stopped (at once if it already is). */
  whenStopped(reject: (reason: unknown) => void): void {
    if (this.stoppedBy) reject(this.stoppedBy.reason);
    else this.onStop = reject;
  }

  /** Stops the attempt: its signal aborts, its result is ignored. */
  stop(reason: unknown): void {
    if (this.stoppedBy) return;
    this.stoppedBy = { reason };
    this.controller?.abort(reason);
    this.onStop?.(reason);
  }

  signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.stoppedBy) this.controller.abort(this.stoppedBy.reason);
    }
    return this.controller.signal;
  }
}

/**
 * The context a step's function gets: its key, its attempt, and its signal, made only if the
 * function reads it (most never do), aborted at once if the attempt was stopped before. A class
 * with `signal` a getter, not an object literal with one: such a literal costs ~0.3 µs to make,
 * per step. The attempt's stop state is private: the function sees what StepRunContext says.
 */
class AttemptContext implements StepRunContext {
  readonly #stop: AttemptStop;

  constructor(
    readonly idempotencyKey: string,
    readonly attempt: number,
    stop: AttemptStop,
  ) {
    this.#stop = stop;
  }

  get signal(): AbortSignal {
    return this.#stop.signal();
  }
}
