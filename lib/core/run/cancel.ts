/**
 * Cancelling a run, fenced. A run that never started (no invocation ever granted, no lease) ends
 * `cancelled` at once, by a finish that expects exactly that — a worker that took the run a
 * moment before makes it fail, and the cancellation is then asked of that worker. A run queued
 * for a flow-control slot with no step run ends the same way, under a lease the canceller takes.
 * Any other run is asked: the request is journaled (write-once, the first reason stands) and the
 * run woken; its invocation delivers it (compensations may follow) and ends it `cancelled`.
 */
import { CancelledError, RunNotFoundError } from "../errors.ts";
import { serializeError } from "../error-codec.ts";
import { JournalView } from "../journal-view.ts";
import { JOURNAL_VERSION, keys } from "../records.ts";
import { type RunMeta, type RunStatus, type StoredRecord, TERMINAL_STATUSES } from "../../ports.ts";
import { leave } from "./flow.ts";
import { journalIdOf } from "./journal-ids.ts";
import { beforeOutsideWrite } from "./journal.ts";
import { ended, finish, grant, release, wakeNow } from "./leases.ts";
import type { RunPorts } from "./ports.ts";

/**
 * What a cancel did: `cancelled` — the run ended now (it had not started); `requested` — the
 * request is journaled, and the run's next step (or the step running now, as soon as it ends)
 * gets it, so its compensations run and it ends `cancelled` (unless its last step was running
 * and it completes first); `already-ended` — it had ended, with `status`.
 */
export interface CancelAnswer {
  outcome: "cancelled" | "requested" | "already-ended";
  /** The run's status as the cancel left it. */
  status: RunStatus;
}

/** How long a canceller's own lease lasts (it finishes or hands the run back well before). */
const CANCEL_LEASE_MS = 30_000;

export async function cancelRun(p: RunPorts, runId: string, reason: string): Promise<CancelAnswer> {
  let run = await p.store.getRun(runId);
  if (!run) throw new RunNotFoundError(runId);
  if (ended(run)) return { outcome: "already-ended", status: run.status };
  const error = serializeError(new CancelledError(reason));
  // Never started: nothing to compensate. A child's parent waits for its end, though: its first
  // invocation ends it and tells the parent.
  if (run.status === "pending" && run.invocations === 0 && !run.lease && !(await p.store.getRecord(runId, keys.parent()))) {
    if (await finish(p, runId, { now: p.clock.now(), status: "cancelled", error, expect: { neverInvoked: true } })) return { outcome: "cancelled", status: "cancelled" };
    // A worker took it first (or it continued): ask that worker instead.
    run = await p.store.getRun(runId);
    if (!run) throw new RunNotFoundError(runId);
    if (ended(run)) return { outcome: "already-ended", status: run.status };
  }
  if (isQueued(run) && (await cancelQueued(p, run, reason))) return { outcome: "cancelled", status: "cancelled" };
  await askToCancel(p, run, reason);
  return { outcome: "requested", status: run.status };
}

/**
 * Asks a run to cancel (`client.cancel`, a parent's cancellation): journals the request in the
 * run's current incarnation (following a switch that raced it), marks the run due and wakes it.
 */
export async function askToCancel(p: RunPorts, run: RunMeta, reason: string): Promise<void> {
  const { runId, incarnation } = run;
  const body = { v: JOURNAL_VERSION, at: p.clock.now(), type: "cancel", reason };
  await beforeOutsideWrite(p, run);
  await p.store.appendRecord(journalIdOf(runId, incarnation), { key: keys.cancel(), body });
  await followIncarnation(p, runId, incarnation, keys.cancel(), body);
  await wakeNow(p, runId, "cancel", "cancel");
}

/**
 * A record written to the incarnation that was current when the run was read: if the run has
 * moved on since (continueAsNew), write it to the current one too (same body: idempotent). The
 * switch moves what it read, and once more what it finds after switching (continue.ts); a record
 * written after both is this writer's to carry. A signal the old incarnation consumed before it
 * switched (`consumedIn` says so) is not carried: it was taken once already.
 */
export async function followIncarnation(p: Pick<RunPorts, "store">, runId: string, read: number | undefined, key: string, body: unknown, consumedIn?: (journalId: string) => Promise<boolean>): Promise<void> {
  let from = read ?? 1;
  for (let hops = 0; hops < 100; hops++) {
    const now = await p.store.getRun(runId);
    const current = now?.incarnation ?? 1;
    if (!now || current <= from || TERMINAL_STATUSES.has(now.status)) return;
    // Follow the switches that carried it already, one incarnation at a time.
    while (from < current && (await p.store.getRecord(journalIdOf(runId, from + 1), key))) from++;
    if (from === current) continue;
    // Left behind where it is now: carry it on — unless a wait there took it before the switch.
    if (await consumedIn?.(journalIdOf(runId, from))) return;
    await p.store.appendRecord(journalIdOf(runId, current), { key, body });
    from = current;
  }
}

/** Waits in a queue: `queued`, or (a journal of an earlier version) `suspended` waiting for one. */
export function isQueued(run: RunMeta): boolean {
  return run.status === "queued" || (run.status === "suspended" && /^(queued|rate-limited):/.test(run.waitingFor ?? ""));
}

/**
 * Ends the queued run `cancelled` if no step of it has run, no invocation holds it, and it still
 * waits in its queue once the canceller holds its lease; true if it did. The canceller takes the
 * run's lease first, so no invocation admits it meanwhile; otherwise (false) the run is handed
 * back as it was, due now.
 */
async function cancelQueued(p: RunPorts, run: RunMeta, reason: string): Promise<boolean> {
  // Unique, so that a retried grant recognises itself and nothing else as its own.
  const owner = `cancel:${globalThis.crypto.randomUUID()}`;
  const g = await grant(p, run.runId, owner, CANCEL_LEASE_MS);
  if ("refused" in g) return false;
  const waitingFor = g.run.waitingFor;
  // Still waiting in a queue as the lease found it: an invocation may have taken the run since
  // it was read and handed it back for something else (a fault's retry). Then nothing says which
  // queue holds its entry, if one does; its next invocation's admission takes it out.
  const stillQueued = /^(queued|rate-limited):/.test(waitingFor ?? "");
  const journal = stillQueued ? await p.store.loadJournal(run.runId) : undefined;
  if (!journal || ranOrChild(run.runId, journal.records)) {
    // Steps ran (its cancellation is delivered in an invocation: compensations may follow), a
    // parent waits for it (an invocation ends it, and tells the parent), or it no longer waits
    // in a queue: handed back as it was, due now, and asked.
    await release(p, g, { now: p.clock.now(), wakeAt: p.clock.now(), ...(stillQueued ? { status: "queued" as const } : {}), ...(waitingFor === undefined ? {} : { waitingFor }) });
    return false;
  }
  const scope = waitingFor?.startsWith("queued:") ? waitingFor.slice("queued:".length) : undefined;
  // Out of the queue first, under the lease: once it has ended, nothing says which queue it was
  // in (a retried cancel finds it ended), so an entry left behind by a fault would stay. A run
  // taken out and then not ended (a fault) is still queued, and its recheck wake queues it again.
  if (scope !== undefined) await p.store.dequeue(scope, { runId: run.runId, at: run.createdAt });
  const finished = await finish(p, run.runId, { now: p.clock.now(), status: "cancelled", error: serializeError(new CancelledError(reason)), expect: { token: g.token } });
  const limit = p.workflows.get(run.workflow)?.concurrency?.limit;
  if (scope !== undefined && finished) {
    // A slot handed to it meanwhile goes to the next in line.
    if (limit === undefined) await p.store.freeSlot(scope, run.runId);
    else await leave(p, { scope, limit }, run.runId);
  }
  return finished;
}

/** Whether a step of the run ran (even an attempt that failed), or it is a child run (an unreadable journal counts as both). */
function ranOrChild(runId: string, records: readonly StoredRecord[]): boolean {
  try {
    const view = JournalView.parse(runId, records);
    return view.hasRun() || view.parent() !== undefined;
  } catch {
    return true;
  }
}
