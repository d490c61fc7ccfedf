/**
 * Sagas: compensations registered as the workflow goes, run in reverse order as journaled steps
 * (each with its own retries and idempotency key) when the workflow decides to undo — after a
 * failure, a rejection or a cancellation.
 */
import type { Step, StepRunContext, StepRunOptions } from "./definition.ts";

/** What `step.saga()` returns. */
export interface Saga {
  /**
   * Registers the compensation of something just done. `name` is the compensation's step name
   * (keep it stable across deploys, like any step's).
   */
  add(name: string, compensate: (ctx: StepRunContext) => Promise<unknown> | unknown, options?: StepRunOptions): void;
  /** Runs the registered compensations, newest first, each as a step; then forgets them. */
  compensate(): Promise<void>;
}

/**
 * A saga on the given step API. Registration is plain code (replay registers the same ones in
 * the same order); only the compensations themselves are journaled.
 *
 * @example
 * ```ts
 * const saga = step.saga();
 * const hold = await step.run("reserve", () => inventory.reserve(order.sku));
 * saga.add("release", ({ idempotencyKey }) => inventory.release(hold.id, idempotencyKey));
 * try {
 *   await step.run("charge", ({ idempotencyKey }) => payments.charge(order, idempotencyKey));
 * } catch (err) {
 *   await saga.compensate();
 *   throw err;
 * }
 * ```
 */
export function createSaga(step: Pick<Step, "run">): Saga {
  const undo: Array<{ name: string; fn: (ctx: StepRunContext) => Promise<unknown> | unknown; options: StepRunOptions | undefined }> = [];
  return {
    add(name, compensate, options) {
      undo.push({ name, fn: compensate, options });
    },
    async compensate() {
      while (undo.length > 0) {
        const next = undo.pop();
        if (next) await step.run(next.name, next.fn, { ...next.options, compensation: true });
      }
    },
  };
}
