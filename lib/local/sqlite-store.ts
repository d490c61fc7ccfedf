/**
 * The embedded journal store: runs and records in the local SQLite file (see `database.ts`).
 *
 * Every rule of the contract is one conditional statement: a write-once record is an
 * `INSERT … ON CONFLICT DO NOTHING` whose change count says who won; a lease change is an
 * `UPDATE … WHERE lease_token = ?`. The only read-modify-write, `acquireLease` (it must say why
 * it refused), runs in an IMMEDIATE transaction, which takes the write lock before reading, so
 * another process cannot slip in between (a deferred one could fail with SQLITE_BUSY_SNAPSHOT).
 *
 * Retention: `purgeExpired` deletes a finished run whose `finished_at` is older than the
 * retention period, with its records and any wake left in the same file, in one transaction.
 * The local runtime's watchdog calls it; nothing else deletes.
 */
import type { Statement } from "better-sqlite3";
import {
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
import { SqliteTables } from "./sqlite-tables.ts";
import type { Database } from "./database.ts";
import { type Applied, appliedRelease, freshRunMeta, type Granted, JournalStoreBase, type Released } from "../core/journal-base.ts";
import { journalIdOf } from "../core/run/journal-ids.ts";
import { AppendBatcher, WriteQueue } from "./sqlite-batch.ts";
import { JournalRows, type RecordCells } from "./journal-rows.ts";
import { type FlowStatements, flowStatements } from "./sqlite-flow.ts";
import { ENDED_STATUSES, fromJson, type RecordRow, type RunRow, toJson, toMeta, toRecord, toRecords } from "./sqlite-rows.ts";
import { type Params, type RunStatements, runStatements } from "./sqlite-run-statements.ts";
import { decodeRunCursor as decodeCursor, encodeRunCursor as encodeCursor } from "../run-cursor.ts";

const DEFAULT_PAGE = 100;
const DAY_MS = 86_400_000;

/** Options of `SqliteJournalStore`. */
export interface SqliteJournalStoreOptions {
  /** How long a finished run is kept before `purgeExpired` removes it. Default 30 days. */
  retentionDays?: number;
  /** Emulated user tables for `step.transact`, by name: their key attributes (`{ stock: ["sku"] }`). */
  tables?: TableKeys;
}

/**
 * A {@link JournalStore} over the local SQLite file. Open the file with `openLocalDatabase`;
 * the store prepares its statements once and never closes the connection it was given.
 *
 * @example
 * ```ts
 * const db = openLocalDatabase(".waymark/journal.db");
 * const store = new SqliteJournalStore(db);
 * await store.createRun({ runId: "order-1", workflow: "order-flow", input: { sku: "A1" }, createdAt: Date.now() });
 * console.log((await store.getRun("order-1"))?.status); // "pending"
 * ```
 */
export class SqliteJournalStore extends JournalStoreBase implements JournalStore, TransactStore {
  private readonly selectRecords: Statement<[string], RecordCells>;
  private readonly selectRecord: Statement<[string, string], RecordRow>;
  /** Whether any record of a journal is in the file: a run just created has none, unless a stray write left some. */
  private readonly anyRecord: Statement<[string], 1>;
  /** The run row's statements (sqlite-run-statements.ts). */
  private readonly sql: RunStatements;
  private readonly batch: AppendBatcher;
  /** Every write goes through the connection's group commit (sqlite-batch.ts), the appends' and the wake table's too. */
  private readonly writes: WriteQueue;
  private readonly setLate: Statement<[string, string, string]>;
  private readonly readJournal: (runId: string, incarnation: number | undefined) => { run: RunRow; journalId: string; records: RecordCells[] } | undefined;
  /** The rows of journals read lately, while exact (journal-rows.ts). */
  private readonly rows: JournalRows;
  private readonly acquire: (runId: string, req: AcquireRequest) => Granted;
  /** Inserts a new run (false: its id is taken), keeping its empty journal (a connection that keeps rows). */
  private readonly createWithJournal: (run: NewRun, input: string | null) => boolean;
  private readonly purge: (finishedBefore: number, limit: number) => PurgedRun[];
  private readonly flow: FlowStatements;
  /** The emulated user tables `step.transact` writes (sqlite-tables.ts). */
  readonly tables: SqliteTables;

  constructor(db: Database, options: SqliteJournalStoreOptions = {}) {
    super();
    const retentionMs = (options.retentionDays ?? 30) * DAY_MS;
    // Arrays, not objects, per row; and each body's size, which SQLite knows without reading it.
    this.selectRecords = db.prepare<[string], RecordCells>("SELECT key, body, late_for, octet_length(key) + octet_length(body) FROM records WHERE run_id = ? ORDER BY rowid").raw();
    this.selectRecord = db.prepare<[string, string], RecordRow>("SELECT key, body, late_for FROM records WHERE run_id = ? AND key = ?");
    this.anyRecord = db.prepare<[string], 1>("SELECT 1 FROM records WHERE run_id = ? LIMIT 1").pluck();
    this.sql = runStatements(db);
    this.batch = new AppendBatcher(db);
    this.writes = WriteQueue.of(db);
    this.setLate = db.prepare<[string, string, string]>("UPDATE records SET late_for = ? WHERE run_id = ? AND key = ?");
    // A read transaction: the meta row and the records come from one snapshot.
    this.readJournal = db.transaction((runId: string, incarnation: number | undefined) => {
      const run = this.sql.selectRun.get(runId);
      if (!run) return undefined;
      const journalId = journalIdOf(runId, incarnation ?? run.incarnation);
      return { run, journalId, records: this.selectRecords.all(journalId) };
    });
    this.rows = JournalRows.of(db);
    const acquire = db.transaction((runId: string, req: AcquireRequest): Granted => {
      const expiresAt = req.now + req.ttlMs;
      const granted = this.sql.grantLease.get({ runId, owner: req.owner, now: req.now, expiresAt, ifToken: req.ifToken ?? null, dueBy: req.dueBy ?? null });
      if (granted) {
        const answer: Granted = { applied: true, lease: { owner: req.owner, token: granted.lease_token, expiresAt }, run: toMeta(granted) };
        // The first grant: whether the journal is empty, looked at in this same transaction.
        if (granted.invocations === 1 && granted.incarnation === 1 && this.anyRecord.get(runId) === undefined) answer.emptyJournal = true;
        return answer;
      }
      const row = this.sql.selectRun.get(runId);
      return { applied: false, run: row && toMeta(row) };
    });
    this.acquire = acquire.immediate;
    // One IMMEDIATE transaction (the write lock held throughout): the version, the insert and the look at the records.
    const create = db.transaction((run: NewRun, input: string | null): boolean => {
      // Read before the insert, as a load reads it before its snapshot (loadJournal).
      const version = this.rows.version();
      if (!this.insertRunRow(run, input)) return false;
      // The new run's journal (its first incarnation's) is empty: kept so, its first load reads
      // no records from the file. Not if a stray append to an unknown run left rows under its id.
      const journalId = journalIdOf(run.runId, 1);
      if (this.anyRecord.get(journalId) === undefined) {
        const rows = this.rows;
        this.writes.afterCommit((ok) => ok && rows.fill(journalId, run.createdAt, version, []));
      }
      return true;
    });
    this.createWithJournal = create.immediate;

    // Retention. The run row goes last and only if still finished, inside one IMMEDIATE
    // transaction: a concurrent createRun of the same id waits for it and then starts afresh.
    const selectExpired = db.prepare<[number, number], { run_id: string; created_at: number; incarnation: number }>(`
      SELECT run_id, created_at, incarnation FROM runs WHERE finished_at IS NOT NULL AND finished_at <= ? AND status IN ${ENDED_STATUSES}
      ORDER BY finished_at LIMIT ?`);
    const deleteRecords = db.prepare<[string]>("DELETE FROM records WHERE run_id = ?");
    const deleteWakes = db.prepare<[string]>("DELETE FROM wakes WHERE run_id = ?");
    const deleteRun = db.prepare<[string, number]>("DELETE FROM runs WHERE run_id = ? AND created_at = ?");
    const purge = db.transaction((finishedBefore: number, limit: number): PurgedRun[] =>
      selectExpired.all(finishedBefore, limit).map((row) => {
        // Every incarnation's journal (continueAsNew), not just the first.
        for (let k = 1; k <= row.incarnation; k++) {
          const journalId = journalIdOf(row.run_id, k);
          deleteRecords.run(journalId);
          this.rows.drop(journalId);
        }
        deleteWakes.run(row.run_id);
        deleteRun.run(row.run_id, row.created_at);
        return { runId: row.run_id, createdAt: row.created_at };
      }),
    );
    this.purge = (now, limit) => purge.immediate(now - retentionMs, Math.max(0, Math.floor(limit)));
    this.flow = flowStatements(db);
    this.tables = new SqliteTables(db, options.tables);
  }

  /** `step.transact`: the user's writes and the record in one IMMEDIATE transaction (sqlite-tables.ts). */
  async transactRecord(runId: string, record: StoredRecord, ops: readonly TxOp[], _requestId: string): Promise<TransactResult> {
    try {
      return this.tables.commit(runId, record, ops);
    } finally {
      // Its own transaction, beside the write queue: the journal is read from the file next time.
      this.rows.drop(runId);
    }
  }

  private insertRunRow(run: NewRun, input: string | null): boolean {
    return this.sql.insertRun.run({ runId: run.runId, workflow: run.workflow, input, createdAt: run.createdAt, child: run.child ? 1 : null }).changes === 1;
  }

  /** Nothing to do: a grant here looks at the journal itself (`emptyJournal`). */
  async markJournaled(_runId: string): Promise<void> {}

  async createRun(run: NewRun): Promise<{ created: boolean; run: RunMeta }> {
    const input = toJson(run.input);
    // A connection that keeps no rows has no empty journal to keep: the insert alone.
    const create = this.rows.keeps ? () => this.createWithJournal(run, input) : () => this.insertRunRow(run, input);
    const inserted = await this.writes.write(run.runId, create);
    if (inserted) {
      return { created: true, run: freshRunMeta(run, fromJson(input)) };
    }
    const existing = this.sql.selectRun.get(run.runId);
    if (!existing) throw new Error(`run "${run.runId}" was neither inserted nor found`);
    return { created: false, run: toMeta(existing) };
  }

  async getRun(runId: string): Promise<RunMeta | undefined> {
    const row = this.sql.selectRun.get(runId);
    return row && toMeta(row);
  }

  /**
   * The run and its journal from one snapshot. The records come from the connection's kept rows
   * when no other connection has committed since they were read (journal-rows.ts): the run's
   * row is read first, the data version after it.
   */
  async loadJournal(runId: string, options: { incarnation?: number } = {}): Promise<Journal | undefined> {
    const run = this.sql.selectRun.get(runId);
    if (run) {
      const kept = this.rows.get(journalIdOf(runId, options.incarnation ?? run.incarnation), run.created_at, this.rows.version());
      if (kept) return { run: toMeta(run), ...toRecords(kept) };
    }
    // Read before the snapshot: a commit in between makes the kept rows look older than they are, never newer.
    const version = this.rows.version();
    const read = this.readJournal(runId, options.incarnation);
    if (!read) return undefined;
    this.rows.fill(read.journalId, read.run.created_at, version, read.records);
    return { run: toMeta(read.run), ...toRecords(read.records) };
  }

  protected async grant(runId: string, req: AcquireRequest): Promise<Granted> {
    return this.writes.write(runId, () => this.acquire(runId, req));
  }

  async renewLease(runId: string, token: number, now: number, ttlMs: number): Promise<boolean> {
    return this.writes.write(runId, () => this.sql.extendLease.run({ runId, token, expiresAt: now + ttlMs }).changes === 1);
  }

  protected async release(runId: string, token: number, update: SuspendUpdate): Promise<Released> {
    const params = { runId, token, now: update.now, wakeAt: update.wakeAt ?? null, waitingFor: update.waitingFor ?? null, status: update.status ?? "suspended" };
    return this.writes.write(runId, (): Released => {
      const row = this.sql.suspend.get(params);
      if (!row) return this.refused(runId);
      return appliedRelease(row.wake_at);
    });
  }

  protected async continueWith(runId: string, token: number, update: ContinueUpdate): Promise<Applied> {
    const params = { runId, token, now: update.now, input: toJson(update.input), incarnation: update.incarnation };
    return this.writes.write(runId, () => (this.sql.continueStmt.run(params).changes === 1 ? { applied: true } : this.refused(runId)));
  }

  protected async finish(runId: string, update: FinishUpdate): Promise<Applied> {
    const params = {
      runId,
      status: update.status,
      now: update.now,
      result: toJson(update.result),
      error: toJson(update.error),
      token: "token" in update.expect ? update.expect.token : null,
    };
    return this.writes.write(runId, () => (this.sql.finishStmt.run(params).changes === 1 ? { applied: true } : this.refused(runId)));
  }

  private refused(runId: string): Applied {
    const row = this.sql.selectRun.get(runId);
    return { applied: false, run: row && toMeta(row) };
  }

  async getRecord(runId: string, key: string): Promise<StoredRecord | undefined> {
    const row = this.selectRecord.get(runId, key);
    return row && toRecord(row);
  }

  /** Group-committed with the appends made together with it (sqlite-batch.ts). */
  appendRecord(runId: string, record: StoredRecord, probe?: string): Promise<AppendResult> {
    return this.batch.append(runId, record, probe);
  }

  async markLate(runId: string, key: string, waitStepId: string): Promise<void> {
    const rows = this.rows;
    await this.writes.write(runId, () => {
      // A row changed in place: the journal is read from the file next time, whatever the commit did.
      this.writes.afterCommit(() => rows.drop(runId));
      return this.setLate.run(waitStepId, runId, key);
    });
  }

  async markDue(runId: string, at: number): Promise<MarkDueResult> {
    // The row RETURNING gives is the run as marked: running, its release will leave it due.
    const marked = await this.writes.write(runId, () => this.sql.due.all({ runId, at })[0]);
    return marked === undefined ? "none" : marked.status === "running" ? "on-release" : "due";
  }

  async listRuns(query: ListQuery): Promise<RunPage> {
    const limit = Math.max(1, Math.floor(query.limit ?? DEFAULT_PAGE));
    const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor);
    const statement = this.sql.selectPage[(query.status !== undefined ? 2 : 0) + (after ? 1 : 0)];
    if (!statement) throw new Error("unreachable: no statement for this query");
    const params: Params = { limit: limit + 1 };
    if (query.status !== undefined) params.status = query.status;
    if (after) Object.assign(params, after);
    const rows = statement.all(params);
    const runs = rows.slice(0, limit).map(toMeta);
    const last = runs[runs.length - 1];
    return rows.length > limit && last ? { runs, cursor: encodeCursor(last) } : { runs };
  }

  async listDueRuns(now: number, limit: number): Promise<RunMeta[]> {
    return this.sql.selectDue.all(now, Math.max(0, Math.floor(limit))).map(toMeta);
  }

  async slots(scope: string): Promise<SlotEntry[]> {
    return this.flow.slots(scope);
  }

  protected async putSlot(scope: string, index: number, holder: SlotHolder, now: number): Promise<boolean> {
    return this.flow.put(scope, index, holder, now);
  }

  protected async deleteSlot(scope: string, index: number, runId: string): Promise<void> {
    this.flow.remove(scope, index, runId);
  }

  async enqueue(scope: string, runId: string, at: number): Promise<void> {
    this.flow.enqueue(scope, runId, at);
  }

  protected async removeQueued(scope: string, run: QueuedRun): Promise<boolean> {
    return this.flow.dequeue(scope, run);
  }

  async peek(scope: string): Promise<QueuedRun | undefined> {
    return this.flow.peek(scope);
  }

  async markLatest(scope: string, runId: string, at: number): Promise<void> {
    this.flow.markLatest(scope, runId, at);
  }

  async latest(scope: string): Promise<string | undefined> {
    return this.flow.latest(scope);
  }

  async purgeExpired(now: number, limit: number): Promise<PurgedRun[]> {
    return this.purge(now, limit);
  }
}
