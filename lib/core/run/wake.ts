/**
 * Wake now: a run's current sleep ends early, journaled as the sleep's resolution (`woken`,
 * write-once, so a cancellation delivered there first stands), and the run is woken. Replay
 * finds the resolution and passes the sleep, so every invocation agrees. `waymark runs wake`,
 * the dashboard's button and `client.wake` come here. A call that died after its resolution and
 * before its mark is completed by the next call (the run still suspended at that sleep, not due).
 */
import { RunFinishedError, RunNotFoundError } from "../errors.ts";
import { JournalView, waitsAndSignals } from "../journal-view.ts";
import { JOURNAL_VERSION, keys } from "../records.ts";
import { journalIdOf } from "./journal-ids.ts";
import { ended, wakeNow } from "./leases.ts";
import type { RunPorts } from "./ports.ts";

export interface WakeAnswer {
  /** The sleeps ended early now (none: the run was not asleep, or only at steps not named). */
  woken: string[];
}

export async function wakeSleeps(p: RunPorts, runId: string, stepId?: string): Promise<WakeAnswer> {
  const journal = await p.store.loadJournal(runId);
  if (!journal) throw new RunNotFoundError(runId);
  if (ended(journal.run)) throw new RunFinishedError(runId, journal.run.status);
  const view = JournalView.parse(runId, journal.records, waitsAndSignals);
  const now = p.clock.now();
  const { run } = journal;
  // A retry: the sleep was woken (by an earlier call that died before its mark, say), yet the run
  // is still suspended at it and not due. Marked and woken again, so the retry completes it.
  const unmarked = (id: string) =>
    view.resolution(id)?.via === "woken" && run.status === "suspended" && run.waitingFor === `sleep:${id}` && !(run.wakeAt !== undefined && run.wakeAt <= now);
  const asleep = view.stepIds().filter((id) => {
    const s = view.step(id);
    return s?.kind === "sleep" && s.wakeAt > now && (view.resolution(id) === undefined || unmarked(id)) && (stepId === undefined || id === stepId);
  });
  const journalId = journalIdOf(runId, run.incarnation);
  const woken: string[] = [];
  for (const id of asleep) {
    const body = { v: JOURNAL_VERSION, at: now, type: "resolution", stepId: id, via: "woken" };
    const res = await p.store.appendRecord(journalId, { key: keys.resolution(id), body });
    if (res.written || (res.existing.body as { via?: unknown }).via === "woken") woken.push(id);
    await p.wakes.cancel(runId, `sleep:${id}`).catch(() => {});
  }
  if (woken.length > 0) await wakeNow(p, runId, "start", "wake-now");
  return { woken };
}
