/**
 * Drains a pollable wake queue into the engine: the host loop of the local and test runtimes
 * (on AWS, the SQS event source mapping plays this part).
 */
import type { Engine, InvocationResult, InvokeOptions } from "./core/engine.ts";
import type { Clock, PollableWakeQueue } from "./ports.ts";

export interface DrainOptions {
  engine: Engine;
  wakes: PollableWakeQueue;
  clock: Clock;
  /** How long a claimed wake stays hidden; if the host dies it reappears after this. */
  visibilityMs: number;
  /** Most invocations at once. */
  concurrency: number;
  invoke?: InvokeOptions;
  onResult?: (runId: string, result: InvocationResult) => void;
  onError?: (runId: string, error: unknown) => void;
}

/**
 * Claims the wakes due now and invokes their runs, at most `concurrency` at a time, until none
 * are due. A wake is acked when its invocation returns; one that throws stays claimed and
 * reappears after the visibility timeout, as an SQS message would. Returns the wakes handled.
 */
export async function drainDueWakes(o: DrainOptions): Promise<number> {
  let handled = 0;
  for (;;) {
    const batch = await o.wakes.claimDue(o.clock.now(), o.concurrency, o.visibilityMs);
    if (batch.length === 0) return handled;
    // One invocation per run per batch: duplicates of a run would only find the lease held.
    const seen = new Set<string>();
    await Promise.all(
      batch.map(async (wake) => {
        if (seen.has(wake.runId)) return o.wakes.ack(wake);
        seen.add(wake.runId);
        try {
          const result = await o.engine.invoke(wake.runId, o.invoke);
          o.onResult?.(wake.runId, result);
          // "busy": the lease holder finishes the work (it re-checks for signals after releasing,
          // and the watchdog covers a holder that dies), so the wake is done with either way.
          await o.wakes.ack(wake);
        } catch (err) {
          o.onError?.(wake.runId, err);
        }
      }),
    );
    handled += batch.length;
  }
}
