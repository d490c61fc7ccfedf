/**
 * Flow control's moves on the store (the definitions are in ../flow-control.ts): a run takes a
 * slot of its scope first in, first out, and whoever frees one hands it to the first queued run
 * that still waits, and wakes it.
 */
import { type QueuedRun, TERMINAL_STATUSES } from "../../ports.ts";
import { HANDOFF_MS, waitsForSlot } from "../flow-control.ts";
import type { RunPorts } from "./ports.ts";

/** Most runs one pass over a queue looks at (passing over runs that no longer wait). */
const MAX_PASS = 100;

type FlowPorts = Pick<RunPorts, "store" | "wakes" | "clock">;

/**
 * Takes a slot, first in, first out: a slot handed to this run while it waited (or taken by it
 * already: a retry) is kept; a free one is taken only if no run waits ahead of it in the queue.
 * False: the run must queue (admission.ts), behind the runs that wait already. `run.at` is where
 * the run stands in the queue (when it was created).
 */
export async function enter(o: FlowPorts, scope: string, limit: number, run: QueuedRun, expiresAt: number): Promise<boolean> {
  const { store, clock } = o;
  const { runId } = run;
  const head = await store.peek(scope);
  if (head !== undefined && head.runId !== runId) {
    // Runs wait ahead of it: only a slot handed to it (or held already: a retry) is kept —
    // `limit` 0 keeps and takes none. Its queue entry goes (the promoter that handed the slot
    // took it off, unless it died first).
    if (!(await store.takeSlot(scope, 0, { runId, expiresAt }, clock.now()))) return false;
    await store.dequeue(scope, run);
    return true;
  }
  // First in line, or nobody waits: a slot it holds is kept, else a free one taken.
  if (!(await store.takeSlot(scope, limit, { runId, expiresAt }, clock.now()))) return false;
  if (head !== undefined) {
    // Out of the queue, and a slot still free goes to the next in line (a promoter that found
    // this run at the head, running, left it to this run).
    await store.dequeue(scope, head);
    await promote(o, scope, limit);
  }
  return true;
}

/**
 * Hands free slots of `scope` to the runs at the head of its queue, in order: each is given a
 * slot (kept for it {@link HANDOFF_MS}), taken off the queue, marked due and woken. A run at the
 * head that has ended, or that runs with a slot of the scope, is taken off and passed over. Stops
 * at the first run no free slot is left for, and at a head that is not waiting and holds no slot:
 * it holds the lease (taking a slot, or about to queue again), and looks at the queue itself once
 * it has its slot or waits. Taking such a run off here could lose it: its own enqueue, just
 * before, found its old entry and added nothing. (A head that holds a slot could queue again only
 * once that slot has expired — its holder paused past its lease — and a run so lost from the
 * queue is found again by its queued recheck, `QUEUED_RECHECK_MS`.)
 * Safe to repeat and to run concurrently: the slots decide, and a run handed a slot twice holds one.
 */
export async function promote(o: FlowPorts, scope: string, limit: number): Promise<void> {
  const { store, clock } = o;
  for (let pass = 0; pass < MAX_PASS; pass++) {
    const head = await store.peek(scope);
    if (head === undefined) return;
    const run = await store.getRun(head.runId);
    if (run === undefined || TERMINAL_STATUSES.has(run.status)) {
      await store.dequeue(scope, head);
      continue;
    }
    if (!waitsForSlot(run)) {
      // Leased: it takes its slot or queues again itself, and looks at the queue then. But one
      // that holds a slot of the scope already is running, and its entry was put back late, by
      // an invocation that had lost the lease (its release applied, the run taken and admitted
      // by the next, its enqueue after): passed over, or it holds up the queue while it runs.
      if (!(await holdsSlot(o, scope, head.runId))) return;
      await store.dequeue(scope, head);
      continue;
    }
    const now = clock.now();
    if (!(await store.takeSlot(scope, limit, { runId: head.runId, expiresAt: now + HANDOFF_MS }, now))) return;
    await store.dequeue(scope, head);
    await store.markDue(head.runId, now);
    await o.wakes.schedule({ runId: head.runId, at: now, reason: "start", key: "slot" });
  }
}

/** Whether `runId` holds a slot of `scope` that has not expired. */
async function holdsSlot(o: FlowPorts, scope: string, runId: string): Promise<boolean> {
  const now = o.clock.now();
  return (await o.store.slots(scope)).some((s) => s.runId === runId && s.expiresAt > now);
}

/** Frees an ended run's slot and hands it on to the first queued run that still waits (an ended run is in no invocation that could hold it). */
export async function leave(o: FlowPorts, slot: { scope: string; limit: number }, runId: string): Promise<void> {
  await o.store.freeSlot(slot.scope, runId);
  await promote(o, slot.scope, slot.limit);
}
