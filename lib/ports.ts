/**
 * The ports: everything the engine needs from the outside world. The core imports only these
 * interfaces; SQLite, DynamoDB, SQS, the Scheduler and the in-memory test doubles implement them.
 *
 * Every store passes one contract suite (`test/contract/store-contract.ts`). The rules that
 * make runs recoverable live in that contract: records are write-once, leases carry a fencing
 * token that grows on every grant, and finishing or releasing a run is conditional on that token.
 *
 * Every operation is safe to retry after a lost response (an SDK retries a request whose first
 * attempt was applied but whose answer never arrived): a conditional write that finds its own
 * effect already in place (the same owner's grant, the same token's release or finish, the same
 * record body) answers as if it had just been applied, never as a conflict.
 */
import type { SerializedError } from "./core/errors.ts";
import type { FlowStore } from "./ports/flow.ts";

export * from "./ports/links.ts";
export * from "./ports/payloads.ts";
export * from "./ports/time.ts";
export * from "./ports/transact.ts";
export * from "./ports/wakes.ts";
export * from "./ports/flow.ts";

/**
 * Lifecycle of a run. `completed`, `failed` and `cancelled` are terminal. `queued`: waiting for
 * a flow-control slot of its key or for its rate window (`waitingFor` says which), never yet
 * admitted in this invocation; `running` once it is.
 */
export type RunStatus = "pending" | "running" | "suspended" | "queued" | "completed" | "failed" | "cancelled";

/** Every status, in lifecycle order (the lists by status, the CLI, the dashboard). */
export const RUN_STATUSES: readonly RunStatus[] = ["pending", "queued", "running", "suspended", "completed", "failed", "cancelled"];

/** The statuses a run ends in: `completed`, `failed`, `cancelled`. */
export const TERMINAL_STATUSES: ReadonlySet<RunStatus> = new Set(["completed", "failed", "cancelled"]);

/** The run's meta record. */
export interface RunMeta {
  runId: string;
  workflow: string;
  /** The validated input, as JSON. */
  input: unknown;
  status: RunStatus;
  createdAt: number;
  updatedAt: number;
  /**
   * When the run next needs an invocation: its wake time while suspended, the lease expiry
   * while running, `createdAt` while pending; absent when only a signal can move it (a wait
   * without timeout) and once finished. The watchdog wakes runs whose `wakeAt` has passed.
   */
  wakeAt?: number;
  /** What a suspended or queued run waits for, e.g. `sleep:cool-off`, `signal:approval`, `queued:<scope>`. */
  waitingFor?: string;
  /** The current lease, if one was granted and not released. */
  lease?: Lease;
  /**
   * A signal (a child's end, a wake-now, a cancel) reached the run while a lease was held: the
   * release of that lease leaves the run due by then at the latest, whatever the holder does
   * after it (`markDue` on a leased run sets it; a grant, a continue and a finish clear it).
   */
  dueOnRelease?: number;
  /** The last fencing token granted (0 before the first grant). */
  leaseToken: number;
  /** Invocations granted so far (a guard against runaway self-wakes). */
  invocations: number;
  /**
   * Which life of the run this is: absent (1) until `step.continueAsNew` starts it afresh. Each
   * incarnation has its own journal; earlier ones are kept for inspection until retention.
   */
  incarnation?: number;
  /**
   * Created by a parent's start, after its `parent` record: a child run. A parent's start of a
   * run id that exists without it (a client started it) is `RunConflictError`: a run created as
   * top-level is never adopted as a child, as its invocations may have read its journal before
   * the parent's record was there. Absent on runs created by versions before it.
   */
  child?: true;
  result?: unknown;
  error?: SerializedError;
  finishedAt?: number;
}

/**
 * The right of one invocation to execute a run: its owner, a fencing token that grows on every
 * grant, and its expiry.
 */
export interface Lease {
  owner: string;
  token: number;
  expiresAt: number;
}

/** A new run, as `createRun` takes it. */
export interface NewRun {
  runId: string;
  workflow: string;
  input: unknown;
  createdAt: number;
  /** A parent's start, after its `parent` record (`RunMeta.child`). */
  child?: true;
}

/** A record as stores keep it: an opaque JSON body under a key unique within the run. */
export interface StoredRecord {
  key: string;
  body: unknown;
  /** Set on a signal that lost a wait's race: the wait it came too late for. */
  lateFor?: string;
  /**
   * The body is a record this process's engine wrote (its own format, unchanged since): set by
   * the engine on its appends, and by a store that answers a load with rows it kept from them.
   * Replay does not check such a record's shape again. A store that does not know leaves it unset.
   * Such a body may be frozen and shared between loads (the SQLite store does so for a flat one:
   * no field an object); the engine never changes a loaded body.
   */
  checked?: true;
}

/** A run's meta record and all of its records, read consistently. */
export interface Journal {
  run: RunMeta;
  records: StoredRecord[];
  /**
   * The records' size in UTF-8 bytes (keys and bodies), when the store knows it without
   * serialising them again; the journal limits then need not measure (journal-limits.ts).
   */
  bytes?: number;
}

/** An append's answer; `probed` answers an append's `probe` (the probed record, or null when absent). */
export type AppendResult = ({ written: true } | { written: false; existing: StoredRecord }) & { probed?: StoredRecord | null };

/**
 * What asking for a run's lease answers: the lease and the run, or why not (no such run, finished,
 * held, or — asked with `dueBy` — suspended and not due by then).
 */
export type AcquireResult =
  | {
      acquired: true;
      lease: Lease;
      run: RunMeta;
      /**
       * The run's journal is empty: this is its first grant, and no record was written to it
       * before (none when it was created, none outside a lease since: `markJournaled`). The
       * invocation need not read it. Absent whenever the store cannot tell (a store may never say it).
       */
      emptyJournal?: true;
    }
  | { acquired: false; reason: "missing" | "finished" | "held" | "not-due"; run?: RunMeta };

/** A request for a run's lease: who asks, when, and for how long. */
export interface AcquireRequest {
  owner: string;
  now: number;
  ttlMs: number;
  /** Take the lease even if unexpired, provided its token is still this one (a dead owner's). */
  ifToken?: number;
  /**
   * Grant a `suspended` run only if it is due by this time (its `wakeAt` at or before it); else
   * refuse it as `not-due`, writing nothing. A wake that finds its run waiting for something
   * later (a duplicate of a wake already handled, a stale wake of an earlier wait) is answered so
   * in one conditional write, instead of an invocation that loads, replays and suspends the run
   * again. Whoever makes a suspended run due marks it so before waking it (`markDue`), so a wake
   * meant for the run finds it due. Pending, queued and running runs are not affected. Every
   * store keeps this rule (the contract suite checks it); only the SQS transport asks today.
   */
  dueBy?: number;
}

/** What a released run looks like until its next invocation. */
export interface SuspendUpdate {
  now: number;
  /** `queued` for a run that waits for a flow-control slot or its rate window; default `suspended`. */
  status?: "suspended" | "queued";
  wakeAt?: number;
  waitingFor?: string;
}

/**
 * What releasing a run's lease answers: refused (the lease was no longer this token's), or
 * released, with the wake time the run was left with — the earlier of the release's own
 * `wakeAt` and the run's `dueOnRelease` (a signal, a child's end, a wake-now or a cancellation
 * that marked the run while the lease was held). Absent: nothing but a signal can move the run.
 * A retried release whose first attempt was applied answers the wake time the run has as stored.
 *
 * @example
 * ```ts
 * const now = Date.now();
 * const grant = await store.acquireLease("order-8472", { owner: "worker-1", now, ttlMs: 30_000 });
 * if (grant.acquired) {
 *   const released = await store.releaseLease("order-8472", grant.lease.token, { now: Date.now(), wakeAt: now + 20_000, waitingFor: "sleep:nap" });
 *   if (released.released && released.wakeAt !== undefined && released.wakeAt < now + 20_000) {
 *     // marked while the lease was held (a signal, a cancellation): wake the run at released.wakeAt
 *   }
 * }
 * ```
 */
export type ReleaseResult = { released: false } | { released: true; wakeAt?: number };

/**
 * What a `markDue` did: `due`, it made a suspended or queued run due by its time (whoever marks
 * sends the wake); `on-release`, the run holds a lease and its release will leave it due (its
 * holder sends the wake); `none`, nothing to do — already due by then (its wake is on its way),
 * already marked on release, pending or finished.
 *
 * @example
 * ```ts
 * if ((await store.markDue("order-8472", Date.now())) === "due") {
 *   // the run was asleep and nobody else is waking it: send its wake now
 * }
 * ```
 */
export type MarkDueResult = "due" | "on-release" | "none";

/** The switch of a run to its next incarnation (`continueAsNew`), as the store applies it. */
export interface ContinueUpdate {
  now: number;
  input: unknown;
  incarnation: number;
}

/**
 * What a finish expects to find, so that no writer ends a run another writer holds: the lease
 * this writer holds (its token), or — for a run that never started — no lease and no invocation
 * ever granted. There is no "finish regardless".
 */
export type FinishExpectation = { token: number } | { neverInvoked: true };

/**
 * A run's end, as the store applies it: the status, the result or error, and the lease it is
 * fenced by.
 */
export interface FinishUpdate {
  now: number;
  status: "completed" | "failed" | "cancelled";
  result?: unknown;
  error?: SerializedError;
  expect: FinishExpectation;
}

/** Which runs to list: by status, a page size, and the cursor of the previous page. */
export interface ListQuery {
  status?: RunStatus;
  limit?: number;
  /** Opaque, from the previous page. */
  cursor?: string;
}

/** One page of listed runs, and the cursor of the next one. */
export interface RunPage {
  runs: RunMeta[];
  cursor?: string;
}

/**
 * A run's meta record and its journals: records and leases. Every status transition is one
 * conditional write that says what it expects (a lease token, or a run never invoked); a retried
 * write that finds its own effect answers as if just applied (see `lib/core/journal-base.ts`).
 */
export interface RunRecords {
  /** Creates the run if absent. Otherwise returns the existing run unchanged (`created: false`). */
  createRun(run: NewRun): Promise<{ created: boolean; run: RunMeta }>;
  getRun(runId: string): Promise<RunMeta | undefined>;
  /**
   * The meta record and every record of the run's current incarnation (or of the one asked for),
   * with a consistent read, all pages. Records of incarnation k > 1 are kept under their own
   * journal id (lib/core/run/journal-ids.ts).
   */
  loadJournal(runId: string, options?: { incarnation?: number }): Promise<Journal | undefined>;
  /** Grants the lease if it is free or expired; the token grows by one on every grant. */
  acquireLease(runId: string, req: AcquireRequest): Promise<AcquireResult>;
  /**
   * A record is about to be written to the first journal of a run never invoked, by a writer
   * outside a lease (a signal, a cancellation): the run's first grant must not answer
   * `emptyJournal` from what the store knew before. Called before the write; idempotent; nothing
   * for a run that is not there. A store that answers `emptyJournal` by looking at the journal
   * itself, in the grant's own transaction, has nothing to do.
   */
  markJournaled(runId: string): Promise<void>;
  /** Extends the lease while its token is current. */
  renewLease(runId: string, token: number, now: number, ttlMs: number): Promise<boolean>;
  /**
   * Suspends (or queues: `update.status`) the run and frees the lease, if `token` is still current.
   * Its `wakeAt` is the earlier of `update.wakeAt` and the run's `dueOnRelease` (then cleared),
   * and the answer says which (`ReleaseResult`): a `wakeAt` earlier than the update's means the
   * run was marked while the lease was held, so the caller knows without reading anything.
   */
  releaseLease(runId: string, token: number, update: SuspendUpdate): Promise<ReleaseResult>;
  /**
   * Starts the run's next incarnation (`step.continueAsNew`): the new input, `incarnation` as
   * given (the current one plus one), pending and due now, the lease freed — if `token` is still
   * current. A retry that finds its own effect in place answers true.
   */
  continueRun(runId: string, token: number, update: ContinueUpdate): Promise<boolean>;
  /** Makes the run terminal and frees the lease, if it finds what `update.expect` says. */
  finishRun(runId: string, update: FinishUpdate): Promise<boolean>;
  /** One record by key, if it exists (a consistent read). */
  getRecord(journalId: string, key: string): Promise<StoredRecord | undefined>;
  /**
   * Write-once: fails (returning the existing record) if the key is already recorded. With
   * `probe`, the answer also says whether the journal holds a record under that key (the
   * run's cancellation): `probed` is that record or `null`. Stores where the probe costs a read
   * of its own do it beside the write, not after it.
   */
  appendRecord(journalId: string, record: StoredRecord, probe?: string): Promise<AppendResult>;
  /** Marks a signal as late for a wait (the loser of the race, kept for audit). */
  markLate(journalId: string, key: string, waitStepId: string): Promise<void>;
  /**
   * Makes a suspended or queued run due by `at` (its `wakeAt` moves earlier, never later), so the
   * watchdog wakes it even if the wake sent next is lost. On a run that holds a lease it sets
   * `dueOnRelease` instead (earlier, never later): the release of that lease then leaves the run
   * due by `at` — the holder may have read the journal before the signal came, and may die before
   * it reads it again. No effect on pending or finished runs. `leased`: the caller just read the
   * run leased by that token (a store that must try one transition after another tries that one first).
   * The answer says which transition it made (`MarkDueResult`), so a caller that read the run
   * leased learns that the lease was released meanwhile and the wake is its own to send.
   */
  markDue(runId: string, at: number, leased?: { token: number }): Promise<MarkDueResult>;
}

/** Runs by status and by due time: the CLI, the dashboard, the watchdog. */
export interface RunListing {
  listRuns(query: ListQuery): Promise<RunPage>;
  /** Non-terminal runs whose `wakeAt` is at or before `now`, oldest first. */
  listDueRuns(now: number, limit: number): Promise<RunMeta[]>;
}

/** Deleting finished runs once their retention has passed. */
export interface RunRetention {
  /**
   * Retention: deletes up to `limit` finished runs whose retention period (the store's, counted
   * from `finishedAt`) has passed by `now`, each with every item it owns (meta, steps, signals),
   * and returns them. Afterwards the run id is free: `createRun` starts a new run that sees
   * nothing of the old one. Unfinished runs are never touched. Idempotent, safe to run
   * concurrently with itself and with a `createRun` of a reused id.
   *
   * The local runtime's watchdog calls it; on DynamoDB, TTL and the table's stream do the same
   * work in production (see `lib/aws/retention-stream.ts`) and this is the explicit sweep.
   * Anything kept outside the store for a run (payload objects) is the caller's to delete, per
   * returned incarnation (`runId` + `createdAt`).
   *
   * @example
   * ```ts
   * const purged = await store.purgeExpired(Date.now(), 100);
   * for (const run of purged) await payloads.deleteRun(run.runId, run.createdAt); // a later PayloadStore
   * ```
   */
  purgeExpired(now: number, limit: number): Promise<PurgedRun[]>;
}

/** Where runs and their journals live: every role, in one store. */
export interface JournalStore extends RunRecords, RunListing, RunRetention, FlowStore {}

/** A run that retention removed: its id and incarnation (`createdAt`; a reused id has another). */
export interface PurgedRun {
  runId: string;
  createdAt: number;
}
