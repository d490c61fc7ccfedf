/**
 * A run's journal as an invocation writes it: write-once records, each append a fence (the loser
 * of a race learns the winner's record), and a cancellation request that every append can see.
 */
import type { AppendResult, Journal, RunMeta, StoredRecord } from "../../ports.ts";
import { JournalView, waitsAndSignals } from "../journal-view.ts";
import { JOURNAL_VERSION, type JournalRecord, keyOf, keys, parseRecord } from "../records.ts";
import { sameBody } from "../retried-writes.ts";
import type { Grant } from "./leases.ts";
import type { RunPorts } from "./ports.ts";

/** An append's answer: the record that stands (ours if `won`), and the run's cancellation if the append looked. */
export interface Appended {
  record: JournalRecord;
  won: boolean;
  /** The reason of a cancellation the journal holds, when the append looked (`probe`); `null`: none. */
  cancel?: string | null;
}

/** The journal of the granted incarnation (the meta record and all its records, consistently). */
export function load(p: RunPorts, g: Grant): Promise<Journal | undefined> {
  return p.store.loadJournal(g.runId, { incarnation: g.incarnation });
}

/**
 * The journal as the invocation first reads it: none read when the grant proved it empty
 * (`emptyJournal`), the run as granted. Equivalent to a read at the moment of the grant; a
 * record written since (a signal) is one written after the read, which the handshakes already
 * cover (`signalArrived`, the append's probe of a cancellation).
 */
export function loadFirst(p: RunPorts, g: Grant): Promise<Journal | undefined> {
  return g.emptyJournal ? Promise.resolve({ run: g.run, records: [] }) : load(p, g);
}

/**
 * Before a writer outside a lease writes to the first journal of `run` as it read it: a run never
 * invoked must stop saying its journal is empty (`markJournaled`), so that its first grant does
 * not skip a read that would find this record. A run invoked before the read needs nothing: its
 * first grant came before the write.
 */
export async function beforeOutsideWrite(p: RunPorts, run: Pick<RunMeta, "runId" | "invocations" | "incarnation">): Promise<void> {
  if (run.invocations === 0 && (run.incarnation ?? 1) === 1) await p.store.markJournaled(run.runId);
}

/**
 * Appends a record write-once to the granted incarnation. An answer lost while the write was
 * applied is read back: our own body counts as written. With `probe`, the answer also says
 * whether the run's cancellation was requested (one read beside the write, or free).
 */
export async function append(p: RunPorts, g: Pick<Grant, "runId" | "journalId">, record: JournalRecord, probe: boolean): Promise<Appended> {
  const key = keyOf(record);
  let res: AppendResult;
  try {
    res = await p.store.appendRecord(g.journalId, { key, body: record, checked: true }, probe ? keys.cancel() : undefined);
  } catch (err) {
    const existing = await p.store.getRecord(g.journalId, key).catch(() => undefined);
    if (!existing) throw err;
    res = sameBody(existing.body, record) ? { written: true } : { written: false, existing };
  }
  // Built field by field: an object spread costs ~0.4 µs on Node 20, and this is every step's path.
  const out: Appended = res.written ? { record, won: true } : { record: parseRecord(g.runId, key, res.existing.body), won: false };
  if (res.probed !== undefined) out.cancel = reasonOf(res.probed) ?? null;
  return out;
}

/**
 * Journals where replay delivers results that landed late (`place#<stepId>`, delivery-order.ts),
 * write-once, before the invocation runs any code: every later replay then delivers them there,
 * whatever lands after. A place another invocation journaled first stands (the journal is read
 * again after this).
 */
export async function placeLate(p: RunPorts, g: Grant, places: ReadonlyArray<{ stepId: string; seq: number }>): Promise<void> {
  for (const { stepId, seq } of places) {
    const body: JournalRecord = { v: JOURNAL_VERSION, at: p.clock.now(), inv: g.run.invocations, type: "place", stepId, seq };
    await append(p, g, body, false);
  }
}

/** The reason of a cancellation the granted incarnation's journal holds (the heartbeat looks). */
export async function cancelRequested(p: RunPorts, g: Pick<Grant, "journalId">): Promise<string | undefined> {
  return reasonOf(await p.store.getRecord(g.journalId, keys.cancel()));
}

/** Journals a cancellation of the run by itself (its `timeout`), write-once: an earlier reason stands. */
export async function requestOwnCancel(p: RunPorts, g: Pick<Grant, "journalId">, reason: string): Promise<string> {
  const body = { v: JOURNAL_VERSION, at: p.clock.now(), type: "cancel", reason };
  const res = await p.store.appendRecord(g.journalId, { key: keys.cancel(), body });
  return res.written ? reason : (reasonOf(res.existing) ?? reason);
}

/**
 * The invocation's half of the signal/wait handshake: a deliverer writes the signal, then reads
 * the waits; the invocation wrote its waits, and reads the signals here, before it releases the
 * lease. A signal that came before its wait was written is only buffered (its deliverer found no
 * wait to resolve, and marked nothing), so only this read finds it. What comes after the wait is
 * written marks the run, and the release answers that (engine-settle.ts, `suspend`).
 */
export async function signalArrived(p: RunPorts, g: Grant, waits: ReadonlyArray<{ stepId: string; signal?: string }>): Promise<boolean> {
  const signalWaits = waits.filter((w) => w.signal !== undefined);
  if (signalWaits.length === 0) return false;
  const fresh = await load(p, g);
  if (!fresh) return false;
  const view = JournalView.parse(g.runId, fresh.records, waitsAndSignals);
  return signalWaits.some((w) => view.resolution(w.stepId) !== undefined || view.bufferedSignals(w.signal ?? "", w.stepId).length > 0);
}

function reasonOf(record: StoredRecord | null | undefined): string | undefined {
  const reason = (record?.body as { reason?: unknown } | undefined)?.reason;
  return typeof reason === "string" ? reason : undefined;
}
