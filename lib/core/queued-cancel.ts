/**
 * Cancelling a run that waits in a queue (status `queued`: for a flow-control slot or its rate
 * window) with no step run yet: it ends `cancelled` at once, as a run that never started does
 * (a child run ends in its next invocation instead, which tells its parent).
 * The canceller takes the run's lease first, so no invocation admits the run meanwhile (one that
 * holds it already makes this answer false, and the cancellation is asked of it instead); then
 * the run leaves its queue, and a slot handed to it goes on to the next run in line.
 */
import { CancelledError } from "./errors.ts";
import { serializeError } from "./error-codec.ts";
import { leave } from "./flow-control.ts";
import { JournalView } from "./journal-view.ts";
import type { Registry } from "./registry.ts";
import { isOwnGrant } from "./retried-writes.ts";
import type { AcquireResult, Clock, JournalStore, RunMeta, StoredRecord, WakeQueue } from "../ports.ts";

export interface QueuedCancelPorts {
  store: JournalStore;
  wakes: WakeQueue;
  clock: Clock;
  workflows: Registry;
}

/** How long the canceller's lease lasts (it finishes or hands the run back well before). */
const CANCEL_LEASE_MS = 30_000;

/** Waits in a queue: `queued`, or (a journal of an earlier version) `suspended` waiting for one. */
export function isQueued(run: RunMeta): boolean {
  return run.status === "queued" || (run.status === "suspended" && /^(queued|rate-limited):/.test(run.waitingFor ?? ""));
}

/**
 * Ends the queued run `cancelled` if no step of it has run and no invocation holds it; true if
 * it did. Otherwise (false) the run is left as it was, due now.
 */
export async function cancelQueued(o: QueuedCancelPorts, run: RunMeta, reason: string): Promise<boolean> {
  const { store, clock } = o;
  const owner = `cancel:${clock.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;
  const granted = await acquire(store, run.runId, owner, clock.now());
  if (!granted.acquired) return false;
  const { token } = granted.lease;
  const waitingFor = granted.run.waitingFor;
  const journal = await store.loadJournal(run.runId);
  if (!journal || ranOrChild(run.runId, journal.records)) {
    // Steps ran (its cancellation is delivered in an invocation: compensations may follow), or a
    // parent waits for it (an invocation ends it, and tells the parent).
    await store.releaseLease(run.runId, token, { now: clock.now(), wakeAt: clock.now(), status: "queued", ...(waitingFor === undefined ? {} : { waitingFor }) });
    return false;
  }
  const finished = await store.finishRun(run.runId, { now: clock.now(), status: "cancelled", error: serializeError(new CancelledError(reason)), token });
  const scope = waitingFor?.startsWith("queued:") ? waitingFor.slice("queued:".length) : undefined;
  const limit = o.workflows.get(run.workflow)?.concurrency?.limit;
  if (scope !== undefined) {
    // Out of the queue; a slot handed to it meanwhile goes to the next in line.
    await store.dequeue(scope, { runId: run.runId, at: run.createdAt });
    if (limit === undefined) await store.freeSlot(scope, run.runId);
    else await leave(o, { scope, limit }, run.runId);
  }
  return finished;
}

/** Whether a step of the run was recorded, or it is a child run (an unreadable journal counts as both). */
function ranOrChild(runId: string, records: readonly StoredRecord[]): boolean {
  try {
    const view = JournalView.parse(runId, records);
    return view.stepIds().length > 0 || view.parent() !== undefined;
  } catch {
    return true;
  }
}

/** A grant whose answer was lost (thrown) is recognised by reading the run: the lease is ours. */
async function acquire(store: JournalStore, runId: string, owner: string, now: number): Promise<AcquireResult> {
  try {
    return await store.acquireLease(runId, { owner, now, ttlMs: CANCEL_LEASE_MS });
  } catch (err) {
    const run = await store.getRun(runId).catch(() => undefined);
    if (run?.lease && isOwnGrant(run, owner)) return { acquired: true, lease: run.lease, run };
    throw err;
  }
}
