import type { StepRunContext } from "./definition.ts";
import { StepTimeoutError } from "./errors.ts";

/**
 * Runs one attempt of a step's function. With a timeout, the attempt fails with
 * {@link StepTimeoutError} when it passes and the step's `signal` aborts; the function may go
 * on in the background, but its result is ignored.
 */
export async function runAttempt<T>(
  idempotencyKey: string,
  stepId: string,
  fn: (ctx: StepRunContext) => Promise<T> | T,
  attempt: number,
  timeoutMs: number | undefined,
): Promise<T> {
  if (timeoutMs === undefined) {
    // Without a timeout nothing aborts: create the signal only if the step asks for it.
    let signal: AbortSignal | undefined;
    return await fn({
      idempotencyKey,
      attempt,
      get signal() {
        return (signal ??= new AbortController().signal);
      },
    });
  }
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const err = new StepTimeoutError(stepId, timeoutMs);
      controller.abort(err);
      reject(err);
    }, timeoutMs);
  });
  try {
    return await Promise.race([Promise.resolve().then(() => fn({ idempotencyKey, attempt, signal: controller.signal })), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
