/**
 * The last stage of an invocation: how the execution ended becomes the run's next state, through
 * the run protocol — finished (completed, failed, cancelled), suspended until its earliest wake,
 * continued as its next incarnation, handed back at once after a lost race, or abandoned past the
 * invocation's deadline.
 */
import type { Blocker, Execution, Outcome } from "./execution.ts";
import { serializeError } from "./error-codec.ts";
import { CancelledError, LeaseLostError, type SerializedError, ValueTooLargeError } from "./errors.ts";
import type { EngineContext } from "./engine-prepare.ts";
import { functionsStopped, giveUpSlot } from "./engine-slot.ts";
import type { InvocationResult } from "./engine-types.ts";
import { isTooLargeForStore } from "./execution.ts";
import { jsonBytes } from "./json.ts";
import type { JournalView } from "./journal-view.ts";
import { isPayloadFault, toMetaRef } from "./payloads.ts";
import type { ParentRecord } from "./records.ts";
import type { Hold } from "./run/heartbeat.ts";
import type { Grant } from "./run/leases.ts";

/** A run's end as the engine decides it. */
export type EndOutcome = { type: "completed"; result: unknown } | { type: "failed"; error: SerializedError } | { type: "cancelled"; reason: string; result?: unknown };

/** Ends the run under this invocation's lease. A result the store refuses as too large fails the run instead, once. */
export async function end(c: EngineContext, g: Grant, outcome: EndOutcome, stored?: unknown, hold?: Hold): Promise<InvocationResult> {
  const slot = hold?.slot;
  let ok: boolean;
  try {
    ok = await c.protocol.finish(
      g,
      outcome.type === "completed"
        ? { type: "completed", result: outcome.result, ...(stored === undefined ? {} : { stored }) }
        : outcome.type === "cancelled"
          ? { type: "cancelled", error: serializeError(new CancelledError(outcome.reason)), ...(outcome.result === undefined ? {} : { result: outcome.result }) }
          : outcome,
    );
  } catch (err) {
    // The store's own limit (input and result share the run's item): fail the run, once.
    if (outcome.type !== "completed" || !isTooLargeForStore(err)) throw err;
    const tooLarge = new ValueTooLargeError("the run's result", jsonBytes(outcome.result), (err as { limitBytes?: number }).limitBytes ?? 0);
    return end(c, g, { type: "failed", error: serializeError(tooLarge) }, undefined, hold);
  }
  if (!ok) return { status: "lost-lease" };
  // Out of its key's queue (best effort: a promoter passes over an ended run at the head).
  if (slot) await c.protocol.leaveQueue(slot.scope, g.runId, g.run.createdAt).catch(() => {});
  // Ended under this lease: no invocation can take the run's slot again, so it is freed now (once
  // no step function of the run still runs).
  if (hold) await giveUpSlot(c, hold, true);
  if (outcome.type === "cancelled") return { status: "cancelled", reason: outcome.reason };
  return outcome.type === "completed" ? { status: "completed", result: outcome.result } : { status: "failed", error: outcome.error };
}

export interface SettleContext {
  view: JournalView;
  parent: ParentRecord | undefined;
  runDeadline: number | undefined;
  /** The cancellation was in the journal when the invocation began (nobody needs waking for it). */
  cancelKnownAtStart: boolean;
  createdAt: number;
}

export async function settle(c: EngineContext, hold: Hold, execution: Execution, outcome: Outcome, s: SettleContext): Promise<InvocationResult> {
  const { protocol, o } = c;
  const g = hold.grant;
  const { clock, wakes } = o;
  for (const key of execution.cancelledWakes) await wakes.cancel(g.runId, key).catch(() => {});
  // A child's cancellation must be written before this invocation ends; a failed one fails it (retried).
  await execution.sideEffectsSettled();
  if (outcome.type === "aborted") {
    // A value by reference that is gone or altered: no retry can mend it, the run fails.
    if (isPayloadFault(outcome.error)) return end(c, g, { type: "failed", error: serializeError(outcome.error) }, undefined, hold);
    if (!outcome.leaseLost) throw outcome.error;
    // Lost an append race, or outlived the lease by our own clock (no renewal was refused):
    // free the run if the lease is still ours and have it continue at once, so the next
    // invocation replays what the journal now says instead of waiting for the lease to lapse —
    // once no step function of it still runs (else the lease lapses, and the run is woken then).
    if (!hold.lost) {
      const stopped = await functionsStopped(c, hold);
      const ours = !hold.lost;
      hold.lost = true;
      if (stopped && ours) await protocol.suspend(g, { now: clock.now(), wakeAt: clock.now(), waitingFor: "continue" }).catch(() => undefined);
      await wakes.schedule({ runId: g.runId, at: stopped ? clock.now() : g.expiresAt, reason: "continue", key: "continue" });
    }
    return { status: "lost-lease" };
  }
  if (outcome.type === "continued") {
    // The next incarnation's invocation may take the run's slot: it is freed first.
    await giveUpSlot(c, hold);
    if (!(await protocol.continueAsNew(g, s.view, outcome.input))) return { status: "lost-lease" };
    return { status: "continued", incarnation: g.incarnation + 1 };
  }
  // A child's end goes to its parent first: if finishing fails, the next invocation ends the
  // same way and delivers the same outcome again (same signal id: one signal).
  if (s.parent && (outcome.type === "completed" || outcome.type === "failed" || outcome.type === "cancelled")) await protocol.notifyParent(s.parent, g.runId, outcome);
  // The run's own deadline wake is pointless once it ends.
  if (s.runDeadline !== undefined && outcome.type !== "suspended") await wakes.cancel(g.runId, "deadline").catch(() => {});
  if (outcome.type === "cancelled") return end(c, g, outcome, undefined, hold);
  if (outcome.type === "completed" && c.payloads) {
    // A large run result goes by reference too (the meta item holds the input beside it).
    const ref = await c.payloads.offload(g.runId, s.createdAt, outcome.result);
    if (ref) return end(c, g, outcome, toMetaRef(ref), hold);
  }
  if (outcome.type !== "suspended") return end(c, g, outcome, undefined, hold);
  // The run's next invocation may take its slot: it is freed before the lease is released.
  await giveUpSlot(c, hold);
  return suspend(c, g, outcome.blockers, execution, s.cancelKnownAtStart ? undefined : s.runDeadline);
}

/**
 * Past the deadline with work in flight: start nothing more, stop renewing, and have the run
 * woken once the lease lapses. The lease is not released early: a step body still running here
 * must not run concurrently in another invocation before it times out.
 */
export async function abandon(c: EngineContext, hold: Hold, execution: Execution): Promise<InvocationResult> {
  const g = hold.grant;
  hold.abandoned = true;
  execution.stop(new LeaseLostError(g.runId, "the invocation passed its deadline"));
  const wakeAt = g.expiresAt;
  c.o.log?.({ event: "abandoned", runId: g.runId, token: g.token, wakeAt });
  await wakeOnLapse(c, g);
  return { status: "abandoned", wakeAt };
}

/** Has the run woken when the lease lapses: an invocation that keeps it (a step function of it still runs) gives it up so. */
export function wakeOnLapse(c: EngineContext, g: Grant): Promise<void> {
  return c.o.wakes.schedule({ runId: g.runId, at: g.expiresAt, reason: "continue", key: "abandoned" });
}

/**
 * Write the blockers' records, release the lease, then schedule the wake. Scheduling after the
 * release matters: a wake delivered while this invocation still held the lease would find the
 * run busy and be dropped. A crash between release and schedule leaves a suspended run whose
 * `wakeAt` has passed, which the watchdog wakes (docs/architecture.md: a run is never stuck silently).
 *
 * Signals close the race from both sides: a deliverer writes its signal, then reads the waits;
 * this invocation writes the wait, then reads the signals, once, before the release (a signal
 * that came before the wait was written is only buffered: its deliverer marks nothing). Nothing
 * is read after the release: whatever arrived while the lease was held — a signal that resolved
 * the wait, a child's end, a wake-now, a cancellation — was marked by its deliverer
 * (`markDue`: `dueOnRelease` on a leased run), and the release answers the wake time it left,
 * the earlier of the blocker's and that mark. Earlier than the blocker's: the wake goes out at
 * that time (the deliverer's own wake found the run busy). A deliverer that died before its mark
 * landed has not delivered yet; it retries with the same id (docs/architecture.md, the run protocol).
 */
async function suspend(c: EngineContext, g: Grant, blockers: Blocker[], execution: Execution, runDeadline: number | undefined): Promise<InvocationResult> {
  const { protocol } = c;
  const { clock, wakes } = c.o;
  // Nothing to wait for (it should not happen): go on at once rather than sleep for ever.
  const waitOn: Blocker[] = blockers.length > 0 ? blockers : [{ stepId: "(none)", wakeAt: clock.now(), key: "continue", reason: "continue", waitingFor: "continue" }];
  // The run's own deadline wakes it too (to cancel it), whatever it waits for.
  const all = runDeadline === undefined ? waitOn : [...waitOn, { stepId: "(run timeout)", wakeAt: runDeadline, key: "deadline", reason: "cancel" as const, waitingFor: "run timeout" }];
  const timed = all.filter((b): b is Blocker & { wakeAt: number } => b.wakeAt !== undefined);
  const first = timed.reduce<(Blocker & { wakeAt: number }) | undefined>((a, b) => (a === undefined || b.wakeAt < a.wakeAt ? b : a), undefined);
  if (!(await execution.persistBlockers())) return { status: "lost-lease" };

  // A signal buffered before its wait was written marks nothing (its deliverer found no wait):
  // read once, before the release, so the run is released due at once.
  const signalWaits = waitOn.filter((b) => b.signal !== undefined);
  const signalled = signalWaits.length > 0 && (await protocol.signalArrived(g, signalWaits));
  const wakeAt = signalled ? clock.now() : first?.wakeAt;
  const waitingFor = (first ?? waitOn[0])?.waitingFor ?? "unknown";
  const released = await protocol.suspend(g, { now: clock.now(), ...(wakeAt === undefined ? {} : { wakeAt }), waitingFor });
  if (!released.released) return { status: "lost-lease" };

  // Due earlier than the blocker's time: marked while we held the lease (a deliverer's wake found
  // the run busy), or signalled. Woken at the time the store holds, so the grant finds it due
  // even if the mark came from a clock ahead of ours (run/leases.ts, `grant`).
  const due = released.wakeAt;
  if (signalled || (due !== undefined && (wakeAt === undefined || due < wakeAt))) {
    const at = due ?? clock.now();
    await wakes.schedule({ runId: g.runId, at, reason: "signal", key: "signal" });
    return { status: "suspended", wakeAt: at, waitingFor };
  }
  if (first) await wakes.schedule({ runId: g.runId, at: first.wakeAt, reason: first.reason, key: first.key });
  return { status: "suspended", wakeAt, waitingFor };
}
