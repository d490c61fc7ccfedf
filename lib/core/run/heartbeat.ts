/**
 * One invocation's hold on its run: the lease as this process knows it, renewed at a third of
 * its length. A refused renewal means another invocation owns the run: the execution is stopped
 * at once. Each renewal also looks for a cancellation requested meanwhile, and renews the run's
 * flow-control slot with the lease.
 */
import type { Timers } from "../../ports.ts";
import { cancelRequested } from "./journal.ts";
import { type Grant, renew } from "./leases.ts";
import type { RunPorts } from "./ports.ts";

/** This invocation's hold on the run, as the engine knows it. */
export interface Hold {
  grant: Grant;
  lost: boolean;
  abandoned: boolean;
  /** Ends the execution at once when a renewal is refused. */
  onLost?: () => void;
  /** Told of a cancellation the heartbeat found (once). */
  onCancel?: (reason: string) => void;
  /**
   * The flow-control slot this invocation holds, renewed with the lease and freed at its end;
   * `expiresAt` is what its last take or renewal wrote — past it, another run may hold the slot.
   */
  slot?: { scope: string; limit: number; expiresAt: number };
  /** Bodies still running when the invocation ended (after a lost lease): its slot is then left to expire. */
  bodiesInFlight?: () => number;
  /** The slot's renewal in flight, if any (a slot is freed only once it has settled). */
  slotRenewal?: Promise<unknown>;
  /** The slot this invocation freed at its end, to hand on once the run's lease is given up. */
  freedSlot?: { scope: string; limit: number };
  /** Resolves true once no step function of the invocation runs, or false after `ms`. */
  bodiesSettled?: (ms: number) => Promise<boolean>;
  /** What this invocation did, for its `invocation` line. */
  counts: { executed: number; replayed: number; retries: number };
}

/**
 * How long before its lease expires, by its own clock, a holder that could not renew takes it as
 * lost: clocks of two processes differ a little, and the next holder's grant must never find this
 * one still running its code.
 */
export function expiryMargin(ttl: number): number {
  return Math.min(2_000, Math.floor(ttl / 10));
}

/** Until when, by this process's clock, the invocation may start new work: its lease's expiry, or its slot's if sooner. */
export function heldUntil(hold: Hold): number {
  return Math.min(hold.grant.expiresAt, hold.slot?.expiresAt ?? Number.POSITIVE_INFINITY);
}

/** Starts renewing `hold`'s lease; `stop()` ends it. */
export function startHeartbeat(p: RunPorts, timers: Timers, ttl: number, hold: Hold): { stop(): void } {
  const every = Math.max(10, Math.floor(ttl / 3));
  const margin = expiryMargin(ttl);
  let stopped = false;
  let cancel = timers.after(every, beat);
  let cancelWatch = watchExpiry();
  const lose = () => {
    if (hold.lost || stopped) return;
    // Taken over or ended (or no renewal got through in time): start nothing new, and end now
    // rather than after the bodies still in flight (a worker must not sit on a run it lost).
    hold.lost = true;
    hold.onLost?.();
  };
  function watchExpiry(): () => void {
    const g = hold.grant;
    return timers.after(Math.max(0, Math.min(g.expiresAt, hold.slot?.expiresAt ?? g.expiresAt) - margin - p.clock.now()), () => {
      if (stopped || hold.abandoned) return;
      if (p.clock.now() >= heldUntil(hold) - margin) lose();
      else cancelWatch = watchExpiry();
    });
  }
  function beat(): void {
    if (stopped) return;
    cancel = timers.after(every, beat);
    if (hold.abandoned) return;
    const g = hold.grant;
    renew(p, g, ttl).then(
      (renewed) => {
        if (!renewed) {
          lose();
          return;
        }
        if (hold.onCancel) {
          cancelRequested(p, g).then((reason) => {
            if (reason !== undefined) hold.onCancel?.(reason);
          }, () => {});
        }
        const slot = hold.slot;
        if (slot) {
          // The slot lasts as long as the lease; one taken over meanwhile (it expired) is lost, and so is the run.
          const expiresAt = g.expiresAt;
          hold.slotRenewal = p.store.takeSlot(slot.scope, slot.limit, { runId: g.runId, expiresAt }, p.clock.now()).then(
            (kept) => (kept ? (slot.expiresAt = Math.max(slot.expiresAt, expiresAt)) : lose()),
            () => {},
          );
        }
      },
      () => {},
    );
  }
  return {
    stop: () => {
      stopped = true;
      cancel();
      cancelWatch();
    },
  };
}
