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
  // The step's signal is made only if its function asks for it (most never do), aborted at once
  // if the attempt was stopped before it asked.
  let controller: AbortController | undefined;
  let stoppedBy: { reason: unknown } | undefined;
  let rejectStopped: ((reason: unknown) => void) | undefined;
  const stop = (reason: unknown) => {
    if (stoppedBy) return;
    stoppedBy = { reason };
    controller?.abort(reason);
    rejectStopped?.(reason);
  };
  const ctx: StepRunContext = {
    idempotencyKey,
    attempt,
    get signal() {
      if (!controller) {
        controller = new AbortController();
        if (stoppedBy) controller.abort(stoppedBy.reason);
      }
      return controller.signal;
    },
  };
  const clearTimer = timeoutMs === undefined ? undefined : timers.after(timeoutMs, () => stop(new StepTimeoutError(stepId, timeoutMs)));
  const unsubscribe = cancel?.subscribe(stop);
  try {
    if (stoppedBy) {
      // Cancelled before it began: the function still runs (its signal aborted), its result ignored.
      Promise.resolve()
        .then(() => fn(ctx))
        .catch(() => {});
      throw stoppedBy.reason;
    }
    const first = fn(ctx);
    if (!isThenable(first)) {
      if (stoppedBy) throw (stoppedBy as { reason: unknown }).reason;
      return first;
    }
    return await new Promise<T>((resolve, reject) => {
      if (stoppedBy) reject((stoppedBy as { reason: unknown }).reason);
      rejectStopped = reject;
      first.then(resolve, reject);
    });
  } finally {
    clearTimer?.();
    unsubscribe?.();
  }
}
