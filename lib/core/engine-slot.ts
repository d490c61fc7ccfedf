/**
 * What an ending invocation does with its run's flow-control slot. Slots belong to runs, not to
 * invocations: a later invocation of the same run that takes a slot keeps the one the run holds.
 * So the slot is freed only while this invocation provably holds the run's lease — before the
 * write that gives the lease up (a release, a continue) — or once its finish has ended the run
 * (then no invocation can take it again); never after the lease was lost or the invocation
 * abandoned; and only once no step function of the run still runs (a step
 * stopped by a cancel or its timeout stops waiting for its function, which may go on). A slot
 * that cannot be freed so lapses at its expiry, when a queued run's expiry wake takes it. The
 * freed slot is handed to the queue once the invocation has ended.
 */
import type { EngineContext } from "./engine-prepare.ts";
import { expiryMargin, heldUntil, type Hold } from "./run/heartbeat.ts";

/** How long an ending invocation that holds a slot waits for step functions it stopped waiting for. */
export const SLOT_HANDOVER_GRACE_MS = 5_000;

/** Frees the invocation's slot if it may (see above; `ended`: the run's finish was written under this lease); afterwards `hold.freedSlot` says whether it did. */
export async function giveUpSlot(c: EngineContext, hold: Hold, ended = false): Promise<void> {
  const slot = hold.slot;
  if (!slot || hold.abandoned || (hold.lost && !ended)) return;
  if (!(await bodiesStopped(c, hold))) return;
  await hold.slotRenewal?.catch(() => {});
  if (hold.slot !== slot || hold.abandoned) return;
  // Owned by our own clock, with the same margin as any step's start.
  if (!ended && (hold.lost || c.o.clock.now() >= heldUntil(hold) - expiryMargin(c.ttl))) return;
  hold.slot = undefined; // no renewal puts it back
  try {
    await c.protocol.freeSlot(slot, hold.grant.runId);
    hold.freedSlot = slot;
  } catch {
    // Unreachable store: the slot lapses at its expiry.
  }
}

/**
 * Whether no user step function of the invocation runs any more, waiting up to the grace (and
 * never past the lease by its own clock, with the margin). Only then may an invocation that ends
 * early give its lease up before it lapses: a function still running must not run beside the next
 * invocation's start of the same attempt.
 */
export function functionsStopped(c: EngineContext, hold: Hold): Promise<boolean> {
  if (!hold.bodiesSettled) return Promise.resolve(true);
  return hold.bodiesSettled(Math.max(0, graceUntil(c, heldUntil(hold))));
}

/** Whether no step function of the invocation runs any more, waiting up to the grace (and never past the slot's expiry). */
async function bodiesStopped(c: EngineContext, hold: Hold): Promise<boolean> {
  if ((hold.bodiesInFlight?.() ?? 0) === 0) return true;
  const grace = graceUntil(c, hold.slot?.expiresAt ?? c.o.clock.now());
  if (grace <= 0 || !hold.bodiesSettled) return false;
  return (await hold.bodiesSettled(grace)) && (hold.bodiesInFlight?.() ?? 0) === 0;
}

/** The hand-over grace, cut short so that it ends the margin before `until` by our clock. */
function graceUntil(c: EngineContext, until: number): number {
  return Math.min(SLOT_HANDOVER_GRACE_MS, until - expiryMargin(c.ttl) - c.o.clock.now());
}
