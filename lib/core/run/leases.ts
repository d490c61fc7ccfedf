/**
 * The lease: who may execute a run, fenced by a token that grows on every grant. Granting,
 * renewing, releasing and finishing are each one conditional write; a write whose answer was
 * lost (thrown) is read back, and found to be this caller's own effect, answered as done.
 */
import { type AcquireRequest, type FinishUpdate, type Lease, type ReleaseResult, type RunMeta, type SuspendUpdate, TERMINAL_STATUSES } from "../../ports.ts";
import { released } from "../journal-base.ts";
import { isFinishedBy, isOwnGrant, isReleased } from "../retried-writes.ts";
import { journalIdOf } from "./journal-ids.ts";
import type { RunPorts } from "./ports.ts";

/** One invocation's right to execute a run: the lease, and the incarnation it executes. */
export interface Grant {
  runId: string;
  owner: string;
  token: number;
  /** Lease expiry by this process's clock: the grant's, then each successful renewal's. */
  expiresAt: number;
  incarnation: number;
  /** Where this incarnation's records are (the run id, or `<runId>~<k>`). */
  journalId: string;
  /** The run as granted. */
  run: RunMeta;
  /** The store proved the journal empty at this grant (`AcquireResult`): the invocation reads none. */
  emptyJournal?: true;
}

export type Refusal = { refused: "missing" | "finished" | "held" | "not-due"; run?: RunMeta };

/**
 * How early, at most, a wake may come for a suspended run and still be granted: what a wake's
 * time and the run's due time may differ by without either being wrong. A run released after a
 * fault is due 5 s later (engine.ts), and the wake that faulted may come back sooner (a short
 * visibility timeout); clocks of the writers that made the run due may run a little ahead.
 */
export const DUE_MARGIN_MS = 10_000;

/**
 * Takes the run's lease: free or expired, or — if `mayBreak` says its holder is dead — that
 * holder's, by its token. A grant whose answer was lost is recognised by reading the run.
 *
 * `wakeAt`: the time of the wake this grant answers. A suspended run that is due neither by then
 * nor by now (with `DUE_MARGIN_MS` to spare) is refused `not-due` by the store, nothing written:
 * a duplicate or stale wake, its run waiting for a wake of its own (ports.ts, `dueBy`).
 */
export async function grant(p: RunPorts, runId: string, owner: string, ttlMs: number, mayBreak?: (lease: Lease) => boolean, wakeAt?: number): Promise<Grant | Refusal> {
  const now = p.clock.now();
  const dueBy = wakeAt === undefined ? {} : { dueBy: Math.max(now, wakeAt) + DUE_MARGIN_MS };
  let res = await acquire(p, runId, { owner, now, ttlMs, ...dueBy });
  if (!res.acquired && res.reason === "held" && res.run?.lease && mayBreak?.(res.run.lease)) {
    res = await acquire(p, runId, { owner, now: p.clock.now(), ttlMs, ifToken: res.run.lease.token, ...dueBy });
  }
  if (!res.acquired) return { refused: res.reason, ...(res.run ? { run: res.run } : {}) };
  const incarnation = res.run.incarnation ?? 1;
  const granted: Grant = { runId, owner, token: res.lease.token, expiresAt: res.lease.expiresAt, incarnation, journalId: journalIdOf(runId, incarnation), run: res.run };
  if (res.emptyJournal) granted.emptyJournal = true;
  return granted;
}

async function acquire(p: RunPorts, runId: string, req: AcquireRequest) {
  try {
    return await p.store.acquireLease(runId, req);
  } catch (err) {
    const run = await p.store.getRun(runId).catch(() => undefined);
    if (run?.lease && isOwnGrant(run, req.owner)) return { acquired: true as const, lease: run.lease, run };
    throw err;
  }
}

/** Extends the lease; false when another invocation took it or the run ended (start nothing more). */
export async function renew(p: RunPorts, g: Grant, ttlMs: number): Promise<boolean> {
  const now = p.clock.now();
  if (!(await p.store.renewLease(g.runId, g.token, now, ttlMs))) return false;
  g.expiresAt = Math.max(g.expiresAt, now + ttlMs);
  return true;
}

/**
 * Suspends (or queues) the run and frees the lease; `released: false` if the lease was no longer
 * ours. Released, it says the run's wake time as the store left it (`ReleaseResult`): earlier
 * than `update.wakeAt` when something marked the run while the lease was held. A lost answer is
 * read back, and the run's stored wake time answered.
 */
export async function release(p: RunPorts, g: Pick<Grant, "runId" | "token">, update: SuspendUpdate): Promise<ReleaseResult> {
  try {
    return await p.store.releaseLease(g.runId, g.token, update);
  } catch (err) {
    const run = await p.store.getRun(g.runId).catch(() => undefined);
    if (isReleased(run, g.token)) return released(run?.wakeAt);
    throw err;
  }
}

/** Ends the run, if it finds what `update.expect` says; a lost answer is read back. */
export async function finish(p: RunPorts, runId: string, update: FinishUpdate): Promise<boolean> {
  try {
    return await p.store.finishRun(runId, update);
  } catch (err) {
    if (isFinishedBy(await p.store.getRun(runId).catch(() => undefined), update)) return true;
    throw err;
  }
}

/** Whether the run has ended (any terminal status). */
export function ended(run: RunMeta | undefined): boolean {
  return run !== undefined && TERMINAL_STATUSES.has(run.status);
}

/**
 * Makes a run due now and wakes it: marked first, so that if the wake is lost (or cannot be sent
 * at all) the watchdog still finds it.
 */
export async function wakeNow(p: RunPorts, runId: string, reason: "signal" | "cancel" | "start", key: string): Promise<void> {
  const now = p.clock.now();
  await p.store.markDue(runId, now);
  await p.wakes.schedule({ runId, at: now, reason, key });
}
