/**
 * Delivering a signal. The deliverer writes the signal into the run's current incarnation, then
 * reads the journal and resolves the wait it is for; the engine writes its wait, then reads the
 * signals. Either this read sees the wait, or the engine sees the signal; one of the two
 * resolves it, with one write-once record, so a signal and a timeout racing leave exactly one
 * decision.
 *
 * A signal id names one delivery over the whole run, across incarnations: a retried delivery
 * whose first attempt reached an earlier incarnation (its answer lost, and the run continued
 * since) is recognised there, never written again where a second wait could take it. Past the
 * first incarnation a delivery leaves a `delivery` record in the first journal as that anchor.
 */
import { RunNotFoundError, SignalConflictError, WaitResolvedError, type WaitDecision } from "../errors.ts";
import { JournalView, waitsAndSignals } from "../journal-view.ts";
import { JOURNAL_VERSION, type ResolutionRecord, type SignalRecord, type StepRecord, keys, parseRecord } from "../records.ts";
import { canonicalJson } from "../json.ts";
import { followIncarnation } from "./cancel.ts";
import { journalIdOf } from "./journal-ids.ts";
import { beforeOutsideWrite } from "./journal.ts";
import { wakeNow } from "./leases.ts";
import type { RunPorts } from "./ports.ts";
import type { RunMeta } from "../../ports.ts";

/** What the sender of a signal hears. */
export interface SignalReceipt {
  signalId: string;
  /** `delivered`: it resolved a wait; `buffered`: no wait yet, the next one will take it. */
  status: "delivered" | "buffered";
  waitId?: string;
}

/** Whether a stored signal is the same delivery as the one being made (name, wait, sender, payload). */
export type SameSignal = (stored: SignalRecord) => Promise<boolean>;

/**
 * Delivers `signal` (checked by the caller: schema, size) to `run` as the caller read it. Throws
 * `SignalConflictError` when the id names another delivery, `WaitResolvedError` when its wait
 * was decided (the signal is kept as a late event).
 */
export async function deliverSignal(p: RunPorts, run: RunMeta, signal: SignalRecord, same: SameSignal): Promise<SignalReceipt> {
  const { runId } = run;
  const k = run.incarnation ?? 1;
  const key = keys.signal(signal.signalId);
  const earlier = k > 1 ? await deliveredEarlier(p, runId, k, signal, same) : undefined;
  if (earlier === undefined) {
    await beforeOutsideWrite(p, run);
    const put = await p.store.appendRecord(journalIdOf(runId, k), { key, body: signal });
    if (!put.written) {
      const existing = parseRecord(runId, put.existing.key, put.existing.body);
      if (existing.type !== "signal" || !(await same(existing))) throw new SignalConflictError(runId, signal.signalId);
    }
  }
  // Carried on if the run switched since it was read (a retry carries what an earlier attempt wrote).
  await followIncarnation(p, runId, earlier ?? k, key, signal, (journalId) => consumedIn(p, runId, journalId, signal.signalId));
  return resolveSignal(p, runId, signal.name, signal.signalId, signal.waitId);
}

/** Whether a wait of that journal took the signal. */
export async function consumedIn(p: RunPorts, runId: string, journalId: string, signalId: string): Promise<boolean> {
  const at = journalId.lastIndexOf("~");
  const incarnation = at < 0 ? 1 : Number(journalId.slice(at + 1));
  const journal = await p.store.loadJournal(runId, { incarnation });
  return journal !== undefined && findResolutionOf(JournalView.parse(runId, journal.records, waitsAndSignals), signalId) !== undefined;
}

/**
 * Past the first incarnation: which earlier incarnation, if any, this signal id was delivered to.
 * Its first attempt may have reached incarnation 1 (its signal record is there), or a later one
 * (the anchor says which, and that journal holds the signal). That delivery stands: the switch
 * moved it on if no wait took it, and the caller carries it on if the switch missed it.
 * Otherwise (undefined) the anchor now names incarnation `k`.
 */
async function deliveredEarlier(p: RunPorts, runId: string, k: number, signal: SignalRecord, same: SameSignal): Promise<number | undefined> {
  const first = journalIdOf(runId, 1);
  const key = keys.signal(signal.signalId);
  const inFirst = await p.store.getRecord(first, key);
  if (inFirst) return conflictUnless(runId, signal, inFirst.body, same, 1);
  const anchor = { v: JOURNAL_VERSION, at: signal.at, type: "delivery", signalId: signal.signalId, incarnation: k };
  const put = await p.store.appendRecord(first, { key: keys.delivery(signal.signalId), body: anchor });
  if (put.written) return undefined;
  const earlier = (put.existing.body as { incarnation?: unknown }).incarnation;
  if (typeof earlier !== "number" || earlier === k) return undefined;
  // An earlier attempt named incarnation `earlier`; if it never wrote the signal there, deliver it now.
  const there = await p.store.getRecord(journalIdOf(runId, earlier), key);
  return there ? conflictUnless(runId, signal, there.body, same, earlier) : undefined;
}

async function conflictUnless(runId: string, signal: SignalRecord, body: unknown, same: SameSignal, incarnation: number): Promise<number> {
  const stored = parseRecord(runId, keys.signal(signal.signalId), body);
  if (stored.type !== "signal" || !(await same(stored))) throw new SignalConflictError(runId, signal.signalId);
  return incarnation;
}

/** The same signal: name, wait, sender and (by the caller's comparison, which reads values by reference) payload. */
export function sameEnvelope(a: SignalRecord, b: SignalRecord): boolean {
  return a.name === b.name && a.waitId === b.waitId && canonicalJson(a.sender) === canonicalJson(b.sender);
}

/** What the sender of `signalId` hears: delivered to a wait, buffered for one, or too late (throws `WaitResolvedError`). */
export async function resolveSignal(p: RunPorts, runId: string, name: string, signalId: string, waitId: string | undefined): Promise<SignalReceipt> {
  const { store, clock } = p;
  // The journal as it is now: a switch since the signal was written moved it to this incarnation.
  const journal = await store.loadJournal(runId);
  if (!journal) throw new RunNotFoundError(runId);
  const journalId = journalIdOf(runId, journal.run.incarnation);
  const view = JournalView.parse(runId, journal.records, waitsAndSignals);
  const consumedBy = findResolutionOf(view, signalId);
  if (consumedBy) {
    // A retried delivery: the first may have died before its wake went out, so send it again.
    await wakeNow(p, runId, "signal", "signal");
    return { signalId, status: "delivered", waitId: consumedBy };
  }
  // Delivered to an earlier incarnation and not here (consumed there, or still to be moved on by
  // the switch in progress): accepted, and nothing more to do here.
  if (!view.signal(signalId) && (journal.run.incarnation ?? 1) > 1) return { signalId, status: "buffered" };
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
      await wakeNow(p, runId, "signal", "signal");
      if (target.timeoutAt !== undefined) await p.wakes.cancel(runId, `timeout:${target.stepId}`).catch(() => {});
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
