/**
 * The second half of delivering a signal (`client.signal`), once its record is written: read the
 * journal again and resolve the wait it is for. Either this read sees the wait, or the engine —
 * which writes the wait, then reads the signals — sees the signal; one of the two resolves it,
 * with one write-once record, so a signal and a timeout racing leave exactly one decision.
 */
import { WaitResolvedError, type WaitDecision } from "./core/errors.ts";
import type { JournalView } from "./core/journal-view.ts";
import { JOURNAL_VERSION, type ResolutionRecord, type StepRecord, keys, parseRecord } from "./core/records.ts";
import type { Clock, JournalStore, WakeQueue } from "./ports.ts";

export interface ResolutionContext {
  store: JournalStore;
  wakes: WakeQueue;
  clock: Clock;
  view(runId: string): Promise<JournalView>;
  /** Marks the run due and wakes it. */
  wake(runId: string): Promise<void>;
}

/** What the sender of `signalId` hears: delivered to a wait, buffered for one, or too late (throws `WaitResolvedError`). */
export async function resolveSignal(
  c: ResolutionContext,
  runId: string,
  journalId: string,
  name: string,
  signalId: string,
  waitId: string | undefined,
): Promise<{ signalId: string; status: "delivered" | "buffered"; waitId?: string }> {
  const { store, clock } = c;
  const view = await c.view(runId);
  const consumedBy = findResolutionOf(view, signalId);
  if (consumedBy) {
    // A retried delivery: the first may have died before its wake went out, so send it again.
    await c.wake(runId);
    return { signalId, status: "delivered", waitId: consumedBy };
  }
  const mine = view.signal(signalId);
  if (mine?.lateFor !== undefined) {
    const res = view.resolution(mine.lateFor);
    if (res) throw new WaitResolvedError(runId, mine.lateFor, decision(res));
  }
  const target = waitId !== undefined ? view.step(waitId) : view.openWaits().find((w) => w.signal === name);
  if (!target || target.kind !== "wait") {
    // By name, with no open wait: if the latest wait for this signal already timed out, this
    // signal came too late for it. It is kept as a late event and the sender hears so (409),
    // instead of "buffered" for a wait that may never come.
    const missed = waitId === undefined ? latestWait(view, name) : undefined;
    const decided = missed && view.resolution(missed.stepId);
    if (missed && decided?.via === "timeout") {
      await store.markLate(journalId, keys.signal(signalId), missed.stepId);
      throw new WaitResolvedError(runId, missed.stepId, decision(decided));
    }
    return { signalId, status: "buffered" };
  }
  // By name, the oldest buffered signal goes first; by wait id, this very signal.
  const chosen = waitId !== undefined ? signalId : (view.bufferedSignals(name)[0]?.signalId ?? signalId);
  let res = view.resolution(target.stepId);
  if (!res) {
    const ours: ResolutionRecord = { v: JOURNAL_VERSION, at: clock.now(), type: "resolution", stepId: target.stepId, via: "signal", signalId: chosen };
    const put = await store.appendRecord(journalId, { key: keys.resolution(target.stepId), body: ours });
    if (put.written) {
      // Wake first, then cancel the timeout: if the wake cannot be sent, the timeout still will.
      await c.wake(runId);
      if (target.timeoutAt !== undefined) await c.wakes.cancel(runId, `timeout:${target.stepId}`).catch(() => {});
      res = ours;
    } else {
      res = parseRecord(runId, put.existing.key, put.existing.body) as ResolutionRecord;
    }
  }
  if (res.signalId === signalId) return { signalId, status: "delivered", waitId: target.stepId };
  if (chosen !== signalId && res.signalId === chosen) return { signalId, status: "buffered" };
  await store.markLate(journalId, keys.signal(signalId), target.stepId);
  throw new WaitResolvedError(runId, target.stepId, decision(res));
}

/** The wait a signal resolved, if any. */
export function findResolutionOf(view: JournalView, signalId: string): string | undefined {
  for (const id of view.stepIds()) if (view.resolution(id)?.signalId === signalId) return id;
  return undefined;
}

/** The most recently recorded wait for a signal name, resolved or not. */
function latestWait(view: JournalView, name: string): (StepRecord & { kind: "wait" }) | undefined {
  let latest: (StepRecord & { kind: "wait" }) | undefined;
  for (const id of view.stepIds()) {
    const s = view.step(id);
    if (s?.kind === "wait" && s.signal === name && (latest === undefined || s.at >= latest.at)) latest = s;
  }
  return latest;
}

/** A wait's decision, as errors and answers report it. */
export function decision(r: ResolutionRecord): WaitDecision {
  return r.via === "signal" ? { via: "signal", signalId: r.signalId ?? "", at: r.at } : { via: r.via, at: r.at };
}
