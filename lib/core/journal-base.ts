/**
 * The rules every journal store shares, written once above each store's few conditional
 * primitives (as Powertools' idempotency persistence layer does): a store says only whether its
 * one conditional write applied, and if not, how the item looked; the rules here decide what that
 * means — a refusal, or (on a retry whose first attempt was applied but lost its answer) the
 * store's own effect, answered as success (retried-writes.ts). The flow-control rules (which slot
 * a run takes, first in first out) are here too, over slot and queue primitives.
 *
 * Stores: `lib/testing/memory-store.ts`, `lib/local/sqlite-store.ts`, `lib/aws/dynamodb-store.ts`.
 * One contract suite per role checks them (`test/contract/`).
 */
import {
  TERMINAL_STATUSES,
  type AcquireRequest,
  type AcquireResult,
  type AppendResult,
  type ContinueUpdate,
  type FinishUpdate,
  type Journal,
  type JournalStore,
  type Lease,
  type ListQuery,
  type MarkDueResult,
  type NewRun,
  type PurgedRun,
  type QueuedRun,
  type ReleaseResult,
  type RunMeta,
  type RunPage,
  type SlotEntry,
  type SlotHolder,
  type StoredRecord,
  type SuspendUpdate,
} from "../ports.ts";
import { isContinuedBy, isFinishedBy, isOwnGrant, isReleased } from "./retried-writes.ts";

/** A conditional write's answer: applied, or refused with the run as it was (undefined: no such run). */
export type Applied = { applied: true } | { applied: false; run: RunMeta | undefined };

/**
 * A release's answer: applied, with the wake time it wrote (the earlier of the update's and the
 * run's `dueOnRelease`; absent when it wrote none), or refused with the run as it was.
 */
export type Released = { applied: true; wakeAt?: number } | { applied: false; run: RunMeta | undefined };

/** A grant's answer: the lease and the run as granted, or the run as it was. */
export type Granted = { applied: true; lease: Lease; run: RunMeta; emptyJournal?: true } | { applied: false; run: RunMeta | undefined };

/** Most queue entries one `dequeue` of the first run tries (each lost to a concurrent taker moves on). */
const DEQUEUE_TRIES = 10;

export abstract class JournalStoreBase implements JournalStore {
  abstract createRun(run: NewRun): Promise<{ created: boolean; run: RunMeta }>;
  abstract getRun(runId: string): Promise<RunMeta | undefined>;
  abstract loadJournal(runId: string, options?: { incarnation?: number }): Promise<Journal | undefined>;
  abstract renewLease(runId: string, token: number, now: number, ttlMs: number): Promise<boolean>;
  abstract getRecord(journalId: string, key: string): Promise<StoredRecord | undefined>;
  abstract appendRecord(journalId: string, record: StoredRecord, probe?: string): Promise<AppendResult>;
  abstract markLate(journalId: string, key: string, waitStepId: string): Promise<void>;
  abstract markDue(runId: string, at: number, leased?: { token: number }): Promise<MarkDueResult>;
  abstract markJournaled(runId: string): Promise<void>;
  abstract listRuns(query: ListQuery): Promise<RunPage>;
  abstract listDueRuns(now: number, limit: number): Promise<RunMeta[]>;
  abstract purgeExpired(now: number, limit: number): Promise<PurgedRun[]>;
  abstract slots(scope: string): Promise<SlotEntry[]>;
  abstract enqueue(scope: string, runId: string, at: number): Promise<void>;
  abstract peek(scope: string): Promise<QueuedRun | undefined>;
  abstract markLatest(scope: string, runId: string, at: number): Promise<void>;
  abstract latest(scope: string): Promise<string | undefined>;

  /** The lease, if the run exists, is not finished, and its lease is free, expired or `req.ifToken`'s. */
  protected abstract grant(runId: string, req: AcquireRequest): Promise<Granted>;
  /** Suspends (or queues) the run and frees its lease, if `token` is held and current; applied, it says the wake time it wrote. */
  protected abstract release(runId: string, token: number, update: SuspendUpdate): Promise<Released>;
  /** The next incarnation, if `token` is held and current. */
  protected abstract continueWith(runId: string, token: number, update: ContinueUpdate): Promise<Applied>;
  /** Terminal, if the run is not finished and matches `update.expect`. */
  protected abstract finish(runId: string, update: FinishUpdate): Promise<Applied>;
  /** Slot `index` of `scope` for `holder`, if it is free, expired by `now`, or already the holder's. */
  protected abstract putSlot(scope: string, index: number, holder: SlotHolder, now: number): Promise<boolean>;
  /** Deletes slot `index` of `scope` if `runId` holds it. */
  protected abstract deleteSlot(scope: string, index: number, runId: string): Promise<void>;
  /** Deletes `run`'s queue entry; true if this call deleted it. */
  protected abstract removeQueued(scope: string, run: QueuedRun): Promise<boolean>;

  async acquireLease(runId: string, req: AcquireRequest): Promise<AcquireResult> {
    const res = await this.grant(runId, req);
    if (res.applied) return res.emptyJournal ? { acquired: true, lease: res.lease, run: res.run, emptyJournal: true } : { acquired: true, lease: res.lease, run: res.run };
    const run = res.run;
    if (!run) return { acquired: false, reason: "missing" };
    // A retried grant whose first attempt was applied (its answer lost): the same answer again.
    if (isOwnGrant(run, req.owner) && run.lease) return { acquired: true, lease: run.lease, run };
    if (TERMINAL_STATUSES.has(run.status)) return { acquired: false, reason: "finished", run };
    return { acquired: false, reason: notDue(run, req.dueBy) ? "not-due" : "held", run };
  }

  async releaseLease(runId: string, token: number, update: SuspendUpdate): Promise<ReleaseResult> {
    const res = await this.release(runId, token, update);
    if (res.applied) return released(res.wakeAt);
    // A retried release whose first attempt was applied (its answer lost): the run's wake time as stored.
    return isReleased(res.run, token) ? released(res.run?.wakeAt) : { released: false };
  }

  async continueRun(runId: string, token: number, update: ContinueUpdate): Promise<boolean> {
    const res = await this.continueWith(runId, token, update);
    return res.applied || isContinuedBy(res.run, token, update);
  }

  async finishRun(runId: string, update: FinishUpdate): Promise<boolean> {
    const res = await this.finish(runId, update);
    return res.applied || isFinishedBy(res.run, update);
  }

  async takeSlot(scope: string, limit: number, holder: SlotHolder, now: number): Promise<boolean> {
    const held = await this.slots(scope);
    const mine = held.find((s) => s.runId === holder.runId);
    // The run's own slot is kept (its expiry moves); else a free or expired one, lowest first.
    const candidates = mine ? [mine.index] : Array.from({ length: limit }, (_, i) => i).filter((i) => (held.find((s) => s.index === i)?.expiresAt ?? 0) <= now);
    for (const index of candidates) if (await this.putSlot(scope, index, holder, now)) return true;
    return false;
  }

  async freeSlot(scope: string, runId: string): Promise<void> {
    for (const slot of (await this.slots(scope)).filter((s) => s.runId === runId)) await this.deleteSlot(scope, slot.index, runId);
  }

  async dequeue(scope: string, run?: QueuedRun): Promise<string | undefined> {
    if (run) return (await this.removeQueued(scope, run)) ? run.runId : undefined;
    for (let tries = 0; tries < DEQUEUE_TRIES; tries++) {
      const first = await this.peek(scope);
      if (!first) return undefined;
      if (await this.removeQueued(scope, first)) return first.runId;
    }
    return undefined;
  }
}

/** Whether a finish's expectation holds for `run` as it is (stores evaluate the same in their conditions). */
export function meetsExpectation(run: RunMeta, update: FinishUpdate): boolean {
  if (TERMINAL_STATUSES.has(run.status)) return false;
  if ("token" in update.expect) return run.lease?.token === update.expect.token;
  return run.lease === undefined && run.invocations === 0;
}

/** Whether a grant asked with `dueBy` is refused for that alone: the run is suspended and not due by then. */
export function notDue(run: RunMeta, dueBy: number | undefined): boolean {
  return dueBy !== undefined && run.status === "suspended" && !(run.wakeAt !== undefined && run.wakeAt <= dueBy);
}

/** A run as `createRun` makes it: pending, due at once, never leased (`input` as the store keeps it). */
export function freshRunMeta(run: NewRun, input: unknown = run.input): RunMeta {
  const meta: RunMeta = {
    runId: run.runId,
    workflow: run.workflow,
    input,
    status: "pending",
    createdAt: run.createdAt,
    updatedAt: run.createdAt,
    wakeAt: run.createdAt,
    leaseToken: 0,
    invocations: 0,
  };
  if (run.child) meta.child = true;
  return meta;
}

/** A store's applied release, with the wake time it wrote if any (a column's NULL: none). */
export function appliedRelease(wakeAt: number | null | undefined): Released {
  return wakeAt === undefined || wakeAt === null ? { applied: true } : { applied: true, wakeAt };
}

/** A release's answer, with the run's wake time if it has one. */
export function released(wakeAt: number | undefined): ReleaseResult {
  return wakeAt === undefined ? { released: true } : { released: true, wakeAt };
}

/** The earlier of two optional times (a release's wake time and the run's `dueOnRelease`). */
export function earliest(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined ? b : b === undefined ? a : Math.min(a, b);
}
