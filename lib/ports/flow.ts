/**
 * The flow-control port: concurrency slots, the queue of runs waiting for one, a key's latest
 * start (part of the ports, `lib/ports.ts`).
 */
/**
 * Flow control (`durable({ concurrency, rateLimit, debounce })`): slots of a scope, the queue of
 * runs waiting for one, a key's latest start. The rules (which slot, first in first out) are
 * written once in `lib/core/journal-base.ts` above each store's few conditional primitives.
 */
export interface FlowStore {
  /**
   * Takes one of `limit` slots of `scope` for a run while it executes. True if the run holds one
   * afterwards: it already did (a retry: its expiry moves), or a slot was free or its holder's
   * expiry had passed (a crashed holder's slot is recovered this way). False if all are held.
   * With `limit` 0 it only keeps a slot the run holds (one handed to it while it was queued) and
   * takes none.
   */
  takeSlot(scope: string, limit: number, holder: SlotHolder, now: number): Promise<boolean>;
  /** Gives up the run's slot of `scope`, if it holds one. Idempotent. */
  freeSlot(scope: string, runId: string): Promise<void>;
  /** Every slot of `scope` that is held, expired or not (the dashboard, the checks). */
  slots(scope: string): Promise<SlotEntry[]>;
  /**
   * Puts a run in the queue of runs waiting for a slot of `scope`, ordered by `at` (whole ms;
   * always the same for a run). Idempotent. Only a run that waits for that queue — status
   * `queued` (or, as an earlier version left it, `suspended`) waiting for `queued:<scope>`, so no
   * lease — is queued, checked in the same atomic
   * write: the invocation that released it so may enqueue long after, once the run was taken
   * again (by its next invocation, or by a canceller that has taken it out of the queue and is
   * about to end it) or has ended. A run that does not exist is not queued.
   */
  enqueue(scope: string, runId: string, at: number): Promise<void>;
  /**
   * Takes a run off the queue of `scope` and returns its id: the first (undefined when empty),
   * or, given `run` (as `peek` gave it, or as it was enqueued), that run wherever it is
   * (undefined if it is not queued so). Each is taken once.
   */
  dequeue(scope: string, run?: QueuedRun): Promise<string | undefined>;
  /** The first run of the queue of `scope`, left in it (undefined when empty). */
  peek(scope: string): Promise<QueuedRun | undefined>;
  /**
   * Debounce: records `runId` as the latest start of `scope` unless a later one (by `at`) is
   * recorded already. Idempotent.
   */
  markLatest(scope: string, runId: string, at: number): Promise<void>;
  /** The latest start recorded for `scope`, if any. */
  latest(scope: string): Promise<string | undefined>;
}

/** A held slot of a scope: its index, its holder and the holder's expiry. */
export interface SlotEntry extends SlotHolder {
  index: number;
}

/** A run in a flow-control queue, and the time (whole ms) it is ordered by. */
export interface QueuedRun {
  runId: string;
  at: number;
}

/** Who holds a flow-control slot, until when (renewed with the run's lease). */
export interface SlotHolder {
  runId: string;
  expiresAt: number;
}
