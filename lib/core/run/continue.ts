/**
 * `step.continueAsNew`: the run's next incarnation. Signals nobody consumed, the parent record
 * and a cancellation move to the new journal first (same bodies, so a retry after a crash
 * rewrites nothing), then one conditional write switches the run over, fenced by the lease.
 * Then the old journal is read once more: anything written to it after the first read (a signal,
 * a cancellation, whose writer read the run before the switch) moves too. A writer that read the
 * run after the switch writes to the new incarnation itself (cancel.ts, `followIncarnation`), so
 * nothing written to an old incarnation is left behind. A crash before the switch leaves this
 * incarnation to be replayed, which ends here again.
 */
import type { JournalView } from "../journal-view.ts";
import { JournalView as View } from "../journal-view.ts";
import { keyOf, keys } from "../records.ts";
import type { StoredRecord } from "../../ports.ts";
import { followIncarnation } from "./cancel.ts";
import { consumedIn } from "./signals.ts";
import { journalIdOf } from "./journal-ids.ts";
import type { Grant } from "./leases.ts";
import type { RunPorts } from "./ports.ts";

/** True once the run is the next incarnation (false: the lease was lost first). */
export async function continueAsNew(p: RunPorts, g: Grant, view: JournalView, input: unknown): Promise<boolean> {
  const { store, clock } = p;
  const next = g.incarnation + 1;
  const target = journalIdOf(g.runId, next);
  // Read again: a wait of this invocation consumed signals after `view` was read (a buffered
  // signal, a child's end), and those must not move on to be consumed a second time.
  const before = await store.loadJournal(g.runId, { incarnation: g.incarnation });
  const moved = new Set<string>();
  for (const record of carried(g.runId, before?.records, view)) {
    await store.appendRecord(target, record);
    moved.add(record.key);
  }
  if (!(await store.continueRun(g.runId, g.token, { now: clock.now(), input, incarnation: next }))) return false;
  // What reached the old journal between that read and the switch.
  const after = await store.loadJournal(g.runId, { incarnation: g.incarnation });
  for (const record of carried(g.runId, after?.records, view)) {
    if (moved.has(record.key)) continue;
    await store.appendRecord(target, record);
    const signalId = (record.body as { type?: unknown; signalId?: string }).type === "signal" ? (record.body as { signalId: string }).signalId : undefined;
    await followIncarnation(p, g.runId, next, record.key, record.body, signalId === undefined ? undefined : (journalId) => consumedIn(p, g.runId, journalId, signalId));
  }
  p.log?.({ event: "continued", runId: g.runId, incarnation: next });
  await p.wakes.schedule({ runId: g.runId, at: clock.now(), reason: "start", key: "start" });
  return true;
}

/**
 * The switch's second look, once more: the invocation that switched may have died (or lost its
 * store) between the switch and its second read of the old journal, and a writer that read the
 * run before the switch and lost its answer does not carry its record on either. So the first
 * invocation of an incarnation — nothing run in it yet, checked before any code runs — reads the
 * previous journal again and carries what is missing (write-once: what is there already stays).
 * True when it carried something (the journal must be read again).
 */
export async function completeSwitch(p: Pick<RunPorts, "store">, g: Grant): Promise<boolean> {
  if (g.incarnation <= 1) return false;
  const old = await p.store.loadJournal(g.runId, { incarnation: g.incarnation - 1 });
  if (!old) return false; // gone with its retention
  let view: JournalView;
  try {
    view = View.parse(g.runId, old.records);
  } catch {
    return false; // another code version's journal: what it holds was carried by that version
  }
  const target = journalIdOf(g.runId, g.incarnation);
  let any = false;
  for (const record of carried(g.runId, undefined, view)) {
    if ((await p.store.appendRecord(target, record)).written) any = true;
  }
  return any;
}

/** What moves on to the next incarnation: unconsumed signals, the parent record, a cancellation. */
function carried(runId: string, records: readonly StoredRecord[] | undefined, fallback: JournalView): StoredRecord[] {
  const view = records ? View.parse(runId, records) : fallback;
  const out: StoredRecord[] = view.unconsumedSignals().map((s) => ({ key: keyOf(s), body: s }));
  const parent = view.parent();
  if (parent) out.push({ key: keyOf(parent), body: parent });
  const cancel = view.cancel();
  if (cancel) out.push({ key: keys.cancel(), body: cancel });
  return out;
}
