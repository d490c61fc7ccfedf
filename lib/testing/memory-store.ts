/**
 * The journal store of the test runtime: plain maps in memory, no I/O. It keeps the same
 * contract as the SQLite and DynamoDB stores (`test/contract/store-contract.ts`), so a workflow
 * tested on it behaves as it will in production.
 *
 * Values are cloned once on the way in and once on the way out. Cloning on the way out, rather
 * than handing out frozen objects, matters: a replayed step returns its recorded result to user
 * code, and a production store hands out a fresh object each time, so this one must too.
 */
import {
  TERMINAL_STATUSES,
  type AcquireRequest,
  type AppendResult,
  type ContinueUpdate,
  type FinishUpdate,
  type Journal,
  type JournalStore,
  type ListQuery,
  type MarkDueResult,
  type NewRun,
  type PurgedRun,
  type QueuedRun,
  type RunMeta,
  type RunPage,
  type SlotEntry,
  type SlotHolder,
  type StoredRecord,
  type SuspendUpdate,
  type TransactResult,
  type TransactStore,
} from "../ports.ts";
import type { TableKeys } from "../core/transact/emulate.ts";
import type { TxOp } from "../core/transact/ops.ts";
import { MemoryTables } from "./memory-tables.ts";
import { sameBody } from "../core/retried-writes.ts";
import { type Applied, appliedRelease, type Granted, type Released, earliest, freshRunMeta, JournalStoreBase, meetsExpectation, notDue } from "../core/journal-base.ts";
import { journalIdOf } from "../core/run/journal-ids.ts";
import { waitingInQueue, waitsForSlot } from "../core/flow-control.ts";
import { decodeRunCursor as decodeCursor, encodeRunCursor as encodeCursor } from "../run-cursor.ts";

const DEFAULT_PAGE = 100;
const DAY_MS = 86_400_000;

/** Options of `MemoryJournalStore`. */
export interface MemoryJournalStoreOptions {
  /** How long a finished run is kept before `purgeExpired` removes it. Default 30 days. */
  retentionDays?: number;
  /** Emulated user tables for `step.transact`, by name: their key attributes (`{ stock: ["sku"] }`). */
  tables?: TableKeys;
}

/**
 * An in-memory {@link JournalStore}. Every method completes its change before its first
 * `await`, so concurrent calls are atomic without locks.
 *
 * @example
 * ```ts
 * const store = new MemoryJournalStore();
 * await store.createRun({ runId: "order-1", workflow: "order-flow", input: { sku: "A1" }, createdAt: Date.now() });
 * const lease = await store.acquireLease("order-1", { owner: "test", now: Date.now(), ttlMs: 30_000 });
 * ```
 */
export class MemoryJournalStore extends JournalStoreBase implements JournalStore, TransactStore {
  private readonly retentionMs: number;
  private readonly runs = new Map<string, RunMeta>();
  private readonly slotsOf = new Map<string, Array<SlotHolder | undefined>>();
  private readonly queues = new Map<string, Map<string, number>>();
  private readonly latestByScope = new Map<string, { runId: string; at: number }>();
  /**
   * Records by run, in write order (a Map keeps insertion order). Kept apart from the runs, as
   * the production stores keep them: a record is stored even if its run does not exist (yet).
   */
  private readonly records = new Map<string, Map<string, StoredRecord>>();

  /** The emulated user tables `step.transact` writes (memory-tables.ts). */
  readonly tables: MemoryTables;

  constructor(options: MemoryJournalStoreOptions = {}) {
    super();
    this.tables = new MemoryTables(options.tables);
    this.retentionMs = (options.retentionDays ?? 30) * DAY_MS;
  }

  async createRun(run: NewRun): Promise<{ created: boolean; run: RunMeta }> {
    const existing = this.runs.get(run.runId);
    if (existing) return { created: false, run: structuredClone(existing) };
    const meta = freshRunMeta(run, structuredClone(run.input));
    this.runs.set(run.runId, meta);
    return { created: true, run: structuredClone(meta) };
  }

  async getRun(runId: string): Promise<RunMeta | undefined> {
    const meta = this.runs.get(runId);
    return meta && structuredClone(meta);
  }

  async loadJournal(runId: string, options: { incarnation?: number } = {}): Promise<Journal | undefined> {
    const meta = this.runs.get(runId);
    if (!meta) return undefined;
    const journalId = journalIdOf(runId, options.incarnation ?? meta.incarnation);
    // One clone call for the whole journal: cheaper than one per record.
    return structuredClone({ run: meta, records: [...(this.records.get(journalId)?.values() ?? [])] });
  }


  protected async grant(runId: string, req: AcquireRequest): Promise<Granted> {
    const meta = this.runs.get(runId);
    if (!meta || TERMINAL_STATUSES.has(meta.status)) return this.refused(runId);
    const held = meta.lease !== undefined && meta.lease.expiresAt > req.now;
    if (held && (req.ifToken === undefined || req.ifToken !== meta.lease?.token)) return this.refused(runId);
    if (notDue(meta, req.dueBy)) return this.refused(runId);
    const token = meta.leaseToken + 1;
    const expiresAt = req.now + req.ttlMs;
    meta.lease = { owner: req.owner, token, expiresAt };
    meta.leaseToken = token;
    meta.status = "running";
    meta.wakeAt = expiresAt;
    delete meta.dueOnRelease;
    meta.invocations += 1;
    meta.updatedAt = req.now;
    const granted: Granted = { applied: true, lease: { ...meta.lease }, run: structuredClone(meta) };
    // The first grant: whether the journal is empty, looked at (a record written before, by anyone, counts).
    if (meta.invocations === 1 && (meta.incarnation ?? 1) === 1 && !this.records.get(runId)?.size) granted.emptyJournal = true;
    return granted;
  }

  /** Nothing to do: a grant here looks at the journal itself (`emptyJournal`). */
  async markJournaled(_runId: string): Promise<void> {}

  async renewLease(runId: string, token: number, now: number, ttlMs: number): Promise<boolean> {
    const meta = this.leased(runId, token);
    if (!meta?.lease) return false;
    // Never backwards: a renewal delayed in transit must not undo a later one.
    meta.lease.expiresAt = Math.max(meta.lease.expiresAt, now + ttlMs);
    meta.wakeAt = meta.lease.expiresAt;
    return true;
  }

  protected async release(runId: string, token: number, update: SuspendUpdate): Promise<Released> {
    const meta = this.leased(runId, token);
    if (!meta) return this.refused(runId);
    const wakeAt = earliest(update.wakeAt, meta.dueOnRelease);
    delete meta.lease;
    meta.status = update.status ?? "suspended";
    setOrDelete(meta, "wakeAt", wakeAt);
    delete meta.dueOnRelease;
    setOrDelete(meta, "waitingFor", update.waitingFor);
    meta.updatedAt = update.now;
    return appliedRelease(wakeAt);
  }

  protected async continueWith(runId: string, token: number, update: ContinueUpdate): Promise<Applied> {
    const meta = this.leased(runId, token);
    if (!meta) return this.refused(runId);
    delete meta.lease;
    meta.input = structuredClone(update.input);
    meta.incarnation = update.incarnation;
    meta.status = "pending";
    meta.wakeAt = update.now;
    delete meta.dueOnRelease;
    delete meta.waitingFor;
    meta.updatedAt = update.now;
    return { applied: true };
  }

  protected async finish(runId: string, update: FinishUpdate): Promise<Applied> {
    const meta = this.runs.get(runId);
    if (!meta || !meetsExpectation(meta, update)) return this.refused(runId);
    meta.status = update.status;
    setOrDelete(meta, "result", structuredClone(update.result));
    setOrDelete(meta, "error", structuredClone(update.error));
    meta.finishedAt = update.now;
    meta.updatedAt = update.now;
    delete meta.lease;
    delete meta.wakeAt;
    delete meta.dueOnRelease;
    delete meta.waitingFor;
    return { applied: true };
  }

  async getRecord(runId: string, key: string): Promise<StoredRecord | undefined> {
    const record = this.records.get(runId)?.get(key);
    return record && structuredClone(record);
  }

  async appendRecord(runId: string, record: StoredRecord, probe?: string): Promise<AppendResult> {
    let records = this.records.get(runId);
    if (!records) this.records.set(runId, (records = new Map()));
    const seen = probe === undefined ? undefined : records.get(probe);
    const probed = probe === undefined ? {} : { probed: seen ? structuredClone(seen) : null };
    const existing = records.get(record.key);
    if (existing && sameBody(existing.body, record.body)) return { written: true, ...probed };
    if (existing) return { written: false, existing: structuredClone(existing), ...probed };
    const stored: StoredRecord = { key: record.key, body: structuredClone(record.body) };
    if (record.lateFor !== undefined) stored.lateFor = record.lateFor;
    records.set(record.key, stored);
    return { written: true, ...probed };
  }

  /**
   * `step.transact`: the user's writes and the record in one synchronous change, or neither. A
   * record already there is ours (a retry: written) or another's (nothing written), and is
   * looked at before any condition: a retry of our own applied transaction must not read its
   * own effects as a failed condition.
   */
  async transactRecord(runId: string, record: StoredRecord, ops: readonly TxOp[], _requestId: string): Promise<TransactResult> {
    const existing = this.records.get(runId)?.get(record.key);
    if (existing) return sameBody(existing.body, record.body) ? { written: true } : { written: false, existing: structuredClone(existing) };
    const stepId = (record.body as { stepId?: string }).stepId ?? record.key;
    const outcome = this.tables.decide(stepId, ops);
    if (!outcome.ok) return { written: false, refused: { index: outcome.index, reason: outcome.reason } };
    this.tables.apply(outcome);
    let records = this.records.get(runId);
    if (!records) this.records.set(runId, (records = new Map()));
    records.set(record.key, { key: record.key, body: structuredClone(record.body) });
    return { written: true };
  }

  async markLate(runId: string, key: string, waitStepId: string): Promise<void> {
    const record = this.records.get(runId)?.get(key);
    if (record) record.lateFor = waitStepId;
  }

  async markDue(runId: string, at: number): Promise<MarkDueResult> {
    const meta = this.runs.get(runId);
    if ((meta?.status === "suspended" || meta?.status === "queued") && (meta.wakeAt === undefined || meta.wakeAt > at)) {
      meta.wakeAt = at;
      return "due";
    }
    if (meta?.status === "running" && meta.lease && (meta.dueOnRelease === undefined || meta.dueOnRelease > at)) {
      meta.dueOnRelease = at;
      return "on-release";
    }
    return "none";
  }

  async listRuns(query: ListQuery): Promise<RunPage> {
    const limit = Math.max(1, Math.floor(query.limit ?? DEFAULT_PAGE));
    const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor);
    const matching: RunMeta[] = [];
    for (const meta of this.runs.values()) {
      if (query.status !== undefined && meta.status !== query.status) continue;
      if (after && compareNewestFirst(meta, after) <= 0) continue;
      matching.push(meta);
    }
    matching.sort(compareNewestFirst);
    const page = matching.slice(0, limit);
    const last = page[page.length - 1];
    const result: RunPage = { runs: structuredClone(page) };
    if (matching.length > limit && last) result.cursor = encodeCursor(last);
    return result;
  }

  async listDueRuns(now: number, limit: number): Promise<RunMeta[]> {
    const due: RunMeta[] = [];
    for (const meta of this.runs.values()) {
      if (meta.wakeAt !== undefined && meta.wakeAt <= now && !TERMINAL_STATUSES.has(meta.status)) due.push(meta);
    }
    due.sort((a, b) => (a.wakeAt ?? 0) - (b.wakeAt ?? 0) || compareIds(a.runId, b.runId));
    return structuredClone(due.slice(0, Math.max(0, limit)));
  }

  async purgeExpired(now: number, limit: number): Promise<PurgedRun[]> {
    const purged: PurgedRun[] = [];
    for (const meta of this.runs.values()) {
      if (purged.length >= limit) break;
      if (meta.finishedAt === undefined || meta.finishedAt + this.retentionMs > now) continue;
      this.runs.delete(meta.runId);
      for (let k = 1; k <= (meta.incarnation ?? 1); k++) this.records.delete(journalIdOf(meta.runId, k));
      purged.push({ runId: meta.runId, createdAt: meta.createdAt });
    }
    return purged;
  }


  async slots(scope: string): Promise<SlotEntry[]> {
    return (this.slotsOf.get(scope) ?? []).flatMap((s, index) => (s ? [{ index, ...s }] : []));
  }

  protected async putSlot(scope: string, index: number, holder: SlotHolder, now: number): Promise<boolean> {
    const slots = this.slotsOf.get(scope) ?? [];
    this.slotsOf.set(scope, slots);
    const held = slots[index];
    if (held && held.runId !== holder.runId && held.expiresAt > now) return false;
    // The holder's own slot only moves later (a late retry, or a paused holder, never shortens it).
    slots[index] = { runId: holder.runId, expiresAt: held?.runId === holder.runId ? Math.max(held.expiresAt, holder.expiresAt) : holder.expiresAt };
    return true;
  }

  protected async deleteSlot(scope: string, index: number, runId: string): Promise<void> {
    const slots = this.slotsOf.get(scope) ?? [];
    if (slots[index]?.runId === runId) slots[index] = undefined;
  }

  async enqueue(scope: string, runId: string, at: number): Promise<void> {
    const run = this.runs.get(runId);
    if (!waitsForSlot(run) || run?.waitingFor !== waitingInQueue(scope)) return; // taken again, or ended: it does not wait here
    const queue = this.queues.get(scope) ?? new Map<string, number>();
    this.queues.set(scope, queue);
    if (!queue.has(runId)) queue.set(runId, Math.max(0, Math.floor(at)));
  }

  protected async removeQueued(scope: string, run: QueuedRun): Promise<boolean> {
    const queue = this.queues.get(scope);
    if (queue?.get(run.runId) !== run.at) return false;
    queue.delete(run.runId);
    return true;
  }

  async peek(scope: string): Promise<QueuedRun | undefined> {
    return this.first(scope);
  }

  private first(scope: string): QueuedRun | undefined {
    const queue = this.queues.get(scope) ?? new Map<string, number>();
    const [first] = [...queue.entries()].sort((a, b) => a[1] - b[1] || compareIds(a[0], b[0]));
    return first && { runId: first[0], at: first[1] };
  }

  async markLatest(scope: string, runId: string, at: number): Promise<void> {
    const now = this.latestByScope.get(scope);
    if (!now || now.at < at || (now.at === at && now.runId < runId)) this.latestByScope.set(scope, { runId, at });
  }

  async latest(scope: string): Promise<string | undefined> {
    return this.latestByScope.get(scope)?.runId;
  }

  private refused(runId: string): { applied: false; run: RunMeta | undefined } {
    const meta = this.runs.get(runId);
    return { applied: false, run: meta && structuredClone(meta) };
  }

  /** The run's meta if `token` is its current lease and it has not finished. */
  private leased(runId: string, token: number): RunMeta | undefined {
    const meta = this.runs.get(runId);
    if (!meta || TERMINAL_STATUSES.has(meta.status) || meta.lease?.token !== token) return undefined;
    return meta;
  }
}

function setOrDelete<K extends "wakeAt" | "waitingFor" | "result" | "error">(meta: RunMeta, key: K, value: RunMeta[K]): void {
  if (value === undefined) delete meta[key];
  else meta[key] = value;
}

/** createdAt descending, then runId descending: negative when `a` comes first. */
function compareNewestFirst(a: Pick<RunMeta, "createdAt" | "runId">, b: Pick<RunMeta, "createdAt" | "runId">): number {
  return b.createdAt - a.createdAt || compareIds(b.runId, a.runId);
}

/**
 * UTF-16 code-unit order. SQLite (BINARY collation) and DynamoDB compare UTF-8 bytes, which
 * agrees except between astral characters and U+E000–U+FFFF; run ids are plain text in practice.
 */
function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
