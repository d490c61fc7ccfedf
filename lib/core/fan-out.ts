/**
 * `step.map`: one journaled step per item, at most `concurrency` bodies running at once. Item
 * step ids come from the item's index (`<mapId>/<index>`), not from completion order, so replay
 * finds every item's record however the live run interleaved; recorded items return at once and
 * never take a slot, so the bound holds across suspensions and replays alike.
 */
import type { StepRunContext, StepRunOptions } from "./definition.ts";

export interface MapOptions extends StepRunOptions {
  /** Most item bodies running at once. Default 10. */
  concurrency?: number;
  /**
   * `fail-fast` (default): the first item that fails (after its retries) rejects the map with its
   * `StepFailedError`; items already running finish and are recorded, no new item starts.
   * `collect`: every item runs; the map resolves to one outcome per item.
   */
  failures?: "fail-fast" | "collect";
}

/** One item's outcome with `failures: "collect"`. */
export type MapOutcome<R> = { ok: true; value: R } | { ok: false; error: unknown };

/** Runs `run(index)` for every index with at most `concurrency` in flight; results in index order. */
export async function boundedMap<R>(count: number, concurrency: number, failFast: boolean, run: (index: number) => Promise<R>): Promise<Array<MapOutcome<R>>> {
  const limit = Math.max(1, Math.floor(concurrency));
  const out: Array<MapOutcome<R>> = new Array(count);
  let next = 0;
  let failed: unknown;
  let hasFailed = false;
  const worker = async (): Promise<void> => {
    while (next < count && !(failFast && hasFailed)) {
      const index = next++;
      try {
        out[index] = { ok: true, value: await run(index) };
      } catch (error) {
        out[index] = { ok: false, error };
        if (!hasFailed) {
          hasFailed = true;
          failed = error;
        }
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, count) }, worker));
  if (failFast && hasFailed) throw failed;
  return out;
}

export type MapFn<T, R> = (item: T, ctx: StepRunContext & { index: number }) => Promise<R> | R;
