import type { StepRunContext } from "./definition.ts";
import type { CancelSource } from "./cancellation.ts";
import { StepTimeoutError } from "./errors.ts";
import { systemTimers, type Timers } from "../ports.ts";

/**
 * Runs one attempt of a step's function. With a timeout, the attempt fails with
 * {@link StepTimeoutError} when it passes and the step's `signal` aborts; when `cancel` aborts
 * (the run was cancelled), the attempt fails with its reason and the step's `signal` aborts too.
 * The function may go on in the background, but its result is ignored.
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
  if (timeoutMs === undefined && cancel === undefined) {
    // Nothing can abort: create the signal only if the step asks for it.
    let signal: AbortSignal | undefined;
    return await fn({
      idempotencyKey,
      attempt,
      get signal() {
        return (signal ??= new AbortController().signal);
      },
    });
  }
  // The step's signal is made only if its function asks for it (most never do), aborted at once
  // if the attempt was stopped before it asked.
  let controller: AbortController | undefined;
  let stoppedBy: { reason: unknown } | undefined;
  const abort = (reason: unknown) => {
    stoppedBy = { reason };
    controller?.abort(reason);
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
  let clearTimer = () => {};
  let unsubscribe: (() => void) | undefined;
  const stopped = new Promise<never>((_, reject) => {
    if (timeoutMs !== undefined) {
      clearTimer = timers.after(timeoutMs, () => {
        const err = new StepTimeoutError(stepId, timeoutMs);
        abort(err);
        reject(err);
      });
    }
    if (cancel) {
      unsubscribe = cancel.subscribe((reason) => {
        abort(reason);
        reject(reason);
      });
    }
  });
  stopped.catch(() => {}); // settles after the race is decided, or never: not an unhandled rejection
  try {
    return await Promise.race([Promise.resolve().then(() => fn(ctx)), stopped]);
  } finally {
    clearTimer();
    unsubscribe?.();
  }
}
