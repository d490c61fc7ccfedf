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
   * `fail-fast` (default): once an item fails (after its retries), no new item starts; the items
   * already running finish and are recorded, and the map rejects with the failure of the first
   * item (by index) that failed — the same one on every replay.
   * `collect`: every item runs; the map resolves to one outcome per item.
   */
  failures?: "fail-fast" | "collect";
}

/** One item's outcome with `failures: "collect"`. */
export type MapOutcome<R> = { ok: true; value: R } | { ok: false; error: unknown };

/**
 * Runs `run(index)` for every index with at most `concurrency` in flight; results in index order.
 * Fail-fast: once an item has failed, no new item starts — except items `recorded` says already
 * ran (on replay: they started before the failure, live) — and once the items in flight have
 * finished, the failure of the lowest index is thrown: the same on every replay.
 */
export async function boundedMap<R>(count: number, concurrency: number, failFast: boolean, run: (index: number) => Promise<R>, recorded: (index: number) => boolean = () => false): Promise<Array<MapOutcome<R>>> {
  const limit = Math.max(1, Math.floor(concurrency));
  const out: Array<MapOutcome<R> | undefined> = new Array(count);
  let next = 0;
  let failed = false;
  const worker = async (): Promise<void> => {
    while (next < count) {
      const index = next++;
      if (failFast && failed && !recorded(index)) continue;
      try {
        out[index] = { ok: true, value: await run(index) };
      } catch (error) {
        out[index] = { ok: false, error };
        failed = true;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, count) }, worker));
  if (failFast) {
    const first = out.find((o): o is { ok: false; error: unknown } => o !== undefined && !o.ok);
    if (first) throw first.error;
  }
  return out as Array<MapOutcome<R>>;
}

export type MapFn<T, R> = (item: T, ctx: StepRunContext & { index: number }) => Promise<R> | R;
