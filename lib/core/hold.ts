/**
 * One invocation's hold on its run: the lease as this process knows it, and the heartbeat that
 * renews it (at a third of its length). A refused renewal means another invocation owns the run
 * (or it was cancelled): the execution is stopped at once. Each renewal also looks for a
 * cancellation requested meanwhile, and renews the run's flow-control slot with the lease.
 */
import type { Clock, JournalStore, Timers } from "../ports.ts";

/** This invocation's hold on the run, as the engine knows it. */
export interface Hold {
  token: number;
  /** Lease expiry by this process's clock: the grant's, then each successful renewal's. */
  expiresAt: number;
  lost: boolean;
  abandoned: boolean;
  /** Ends the execution at once when a renewal is refused. */
  onLost?: () => void;
  /** Looks for a cancellation requested while running (each heartbeat). */
  checkCancel?: () => void;
  /** The flow-control slot this invocation holds (renewed with the lease, freed at its end). */
  slot?: { scope: string; limit: number };
  /** What this invocation did, for its `invocation` line. */
  counts: { executed: number; replayed: number; retries: number };
}

/** Starts renewing `hold`'s lease; `stop()` ends it. */
export function startHeartbeat(store: JournalStore, clock: Clock, timers: Timers, ttl: number, runId: string, hold: Hold): { stop(): void } {
  const every = Math.max(10, Math.floor(ttl / 3));
  let stopped = false;
  let cancel = timers.after(every, beat);
  function beat(): void {
    if (stopped) return;
    cancel = timers.after(every, beat);
    if (hold.abandoned) return;
    const now = clock.now();
    store.renewLease(runId, hold.token, now, ttl).then(
      (renewed) => {
        if (renewed) {
          hold.expiresAt = Math.max(hold.expiresAt, now + ttl);
          hold.checkCancel?.();
          if (hold.slot) void store.takeSlot(hold.slot.scope, hold.slot.limit, { runId, expiresAt: hold.expiresAt }, now).catch(() => false);
        } else {
          // Taken over or cancelled: start nothing new, and end now rather than after the
          // bodies still in flight (a worker must not sit on wakes for a run it lost).
          hold.lost = true;
          hold.onLost?.();
        }
      },
      () => {},
    );
  }
  return {
    stop: () => {
      stopped = true;
      cancel();
    },
  };
}
