/**
 * `step.map` and `step.parallel`: fan-out with durable sub-contexts. Every item (or branch) gets a
 * step API of its own — run, sleep, waitForSignal, invoke, a nested map — journaled under the
 * item's scope (`<mapId>[<index>]/…`, `<id>[<branch>]/…`), so replay finds every item's steps
 * however the live run interleaved them. The options and outcomes are here; the scheduling is in
 * execution/fan-out.ts.
 */
import type { SerializedError } from "./errors.ts";
import type { SignalMap, Step } from "./step-api.ts";

/**
 * Options of `step.map`: how many items run at once, whether a failure fails the map or is
 * collected, and whether a waiting item keeps its slot.
 */
export interface MapOptions {
  /** Most items running at once (default 10). An item running is one whose code is not asleep or waiting. */
  concurrency?: number;
  /**
   * `fail-fast` (default): once an item fails (throws), no new item starts; the items already
   * running finish (including their sleeps and waits, over as many invocations as that takes),
   * then the map rejects with the failure of the first item (by index) that failed — the same
   * one on every replay. `collect`: every item runs; the map resolves to one outcome per item.
   */
  failures?: "fail-fast" | "collect";
  /**
   * An item that sleeps or waits frees its slot for the next item (default), or keeps it (`true`):
   * then at most `concurrency` items are ever started and not finished — e.g. five approvals open at once.
   */
  holdSlotWhileWaiting?: boolean;
}

/**
 * The step API an item's code gets: every durable operation, in the item's scope, and its index
 * (`continueAsNew` belongs to the workflow's own code).
 */
export type ItemStep<S extends SignalMap = SignalMap> = Omit<Step<S>, "continueAsNew"> & {
  /** The item's position in the list (a `step.parallel` branch: its position among the branches). */
  readonly index: number;
};

/** An item's code: orchestration like the workflow's own, its side effects in `step.run`. */
export type MapFn<T, R, S extends SignalMap = SignalMap> = (item: T, step: ItemStep<S>) => Promise<R> | R;

/** One item's outcome with `failures: "collect"`: its value, or its error as the journal keeps errors (JSON-safe). */
export type MapOutcome<R> = { ok: true; value: R } | { ok: false; error: SerializedError };

/** `step.parallel`'s options: those of `step.map` (its branches are its items). */
export type ParallelOptions = MapOptions;
