/**
 * Group commit for the SQLite journal: appends made together — the branches of a `Promise.all`,
 * the items of a `step.map`, the records of several runs executing at once — are written in one
 * transaction, so one commit (one fsync with `durability: "full"`) covers them all.
 *
 * A write is queued with the run it belongs to. While one run writes alone, the queue is written
 * once no further write arrived during a turn of the microtask queue: a sequential step pays two
 * microtask turns and no timer, and the run goes on to its next wait without yielding to the
 * event loop (parallel branches of one run reach their appends within those few turns). Once
 * writes of two runs were committed within one turn of the event loop — several runs executing
 * at once — the queue waits for the end of the turn instead (`setImmediate`), so every run that
 * is ready in that turn shares the commit: 19 WAL frames per run instead of 33 for 200 runs × 5
 * steps (bench/commits.ts), and 25–40% more runs per second. It falls back to the microtask
 * rule when an end-of-turn batch held the writes of one run only. Either way every append keeps its
 * own answer: won, or the record that stands (write-once), and the probed record as the same
 * transaction saw it. Nothing is answered before its commit returns, so a crash (SIGKILL) at
 * any point loses only appends nobody was told were written; a commit that fails fails every
 * append of its batch (the caller reads back, as after a lost answer: run/journal.ts).
 *
 * A batch of one is a single autocommitted statement: `INSERT … ON CONFLICT DO NOTHING
 * RETURNING (the probe)`, which both writes the record and reads the probed one.
 */
import type { Statement } from "better-sqlite3";
import type { AppendResult, StoredRecord } from "../ports.ts";
import { runIdOfJournal } from "../core/run/journal-ids.ts";
import { sameBody } from "../core/retried-writes.ts";
import { commitCounter } from "./checkpointer.ts";
import type { Database } from "./database.ts";
import { JournalRows } from "./journal-rows.ts";
import { type RecordRow, toJson, toRecord } from "./sqlite-rows.ts";

/** A write waiting for the next group commit: the statements it runs. */
interface Pending {
  run: () => unknown;
  /** The run the write belongs to (undefined: none, such as a claim of due wakes). */
  runId: string | undefined;
  resolve: (r: never) => void;
  reject: (e: unknown) => void;
}

/** A write of a batch that failed alone (its statement), the transaction going on without it. */
class Failed {
  constructor(readonly error: unknown) {}
}


const queues = new WeakMap<Database, WriteQueue>();

const settled = Promise.resolve();
/**
 * Calls `fn` in a later turn of the microtask queue, as `queueMicrotask` does, without the
 * async-hooks resource Node's `queueMicrotask` makes per call (~60 ns of its ~160 here; a
 * sequential append takes two turns).
 */
function afterMicrotasks(fn: () => void): void {
  void settled.then(fn);
}

/** Writes of more than one run were committed in the current turn. */
const SEVERAL = Symbol("several runs");

/**
 * The group commit of one connection: every write of the journal store and the wake table on it
 * goes through here (a grant, an append, a finish, a wake's schedule or ack), so the writes of
 * runs executing at once share commits whichever kind they are. A write is a synchronous
 * function of statements; inside a batch it runs in the batch's transaction (a write that is a
 * transaction of its own, such as a grant, runs as a savepoint in it, with the same isolation:
 * the batch holds the write lock from its first statement).
 */
export class WriteQueue {
  private readonly writeMany: (batch: readonly Pending[]) => unknown[];
  private queue: Pending[] = [];
  private seen = 0;
  private scheduled = false;
  /** Whether the queue waits for the end of the event loop's turn (several runs are writing). */
  private endOfTurn = false;
  /** The run of the writes committed in this turn of the event loop (`SEVERAL` once two differed). */
  private turnRun: string | undefined | typeof SEVERAL = undefined;
  private turnEndScheduled = false;
  /** What to do once the commit being made returned or failed (`afterCommit`). */
  private committed: Array<(ok: boolean) => void> = [];
  /** Counts this connection's commits for the background checkpoint (checkpointer.ts); undefined: SQLite checkpoints inline. */
  private readonly counted: (() => void) | undefined;

  /** The queue of `db` (one per connection, shared by every store over it). */
  static of(db: Database): WriteQueue {
    let queue = queues.get(db);
    if (!queue) queues.set(db, (queue = new WriteQueue(db)));
    return queue;
  }

  private constructor(db: Database) {
    this.counted = commitCounter(db);
    // IMMEDIATE: the write lock first, so a writer in another process cannot slip in between.
    this.writeMany = db.transaction((batch: readonly Pending[]) =>
      batch.map((p) => {
        const mark = this.committed.length;
        try {
          return p.run();
        } catch (err) {
          // A statement's own failure leaves the transaction open: only that write fails. One
          // that ended the transaction (an I/O error) fails them all, as nothing was kept.
          if (!db.inTransaction) throw err;
          // What it changed before it threw stays in the transaction: its callbacks hear `false`
          // at the commit, in their place, so an earlier write's callback cannot undo theirs.
          this.failFrom(mark);
          return new Failed(err);
        }
      }),
    ).immediate;
  }

  /** Runs `write` (a write of run `runId`) in the next group commit; resolves once that commit returned. */
  write<T>(runId: string | undefined, write: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ run: write, runId, resolve: resolve as (r: never) => void, reject });
      if (this.scheduled) return;
      this.scheduled = true;
      this.seen = 0;
      if (this.endOfTurn) setImmediate(this.flushTurn);
      else afterMicrotasks(this.tick);
    });
  }

  /**
   * Calls `then(true)` once the commit that holds the write being run has returned, `then(false)`
   * if that write or its commit failed (what it changed may or may not be in the file). Only
   * from inside a write.
   */
  afterCommit(then: (ok: boolean) => void): void {
    this.committed.push(then);
  }

  /** Waits while writes keep arriving (one more microtask turn each time), then commits them. */
  private readonly tick = (): void => {
    if (this.queue.length > this.seen) {
      this.seen = this.queue.length;
      afterMicrotasks(this.tick);
      return;
    }
    this.note(this.queue);
    this.flush();
  };

  /** The end-of-turn commit; a batch of one run's writes returns the queue to the microtask rule. */
  private readonly flushTurn = (): void => {
    const first = this.queue[0]?.runId;
    if (this.queue.every((p) => p.runId === first)) this.endOfTurn = false;
    this.flush();
  };

  /** Notes the runs of a microtask batch: a second run in one turn of the event loop switches to end-of-turn commits. */
  private note(batch: readonly Pending[]): void {
    for (const p of batch) {
      if (this.turnRun === SEVERAL || p.runId === undefined) continue;
      if (this.turnRun === undefined) this.turnRun = p.runId;
      else if (this.turnRun !== p.runId) this.turnRun = SEVERAL;
    }
    if (this.turnRun === SEVERAL) this.endOfTurn = true;
    if (!this.turnEndScheduled) {
      this.turnEndScheduled = true;
      setImmediate(this.turnEnded);
    }
  }

  private readonly turnEnded = (): void => {
    this.turnEndScheduled = false;
    this.turnRun = undefined;
  };

  /** Makes the `afterCommit` callbacks from `from` on hear `false` whatever the commit does. */
  private failFrom(from: number): void {
    for (let i = from; i < this.committed.length; i++) {
      const then = this.committed[i]!;
      this.committed[i] = () => then(false);
    }
  }

  /** Runs and forgets the `afterCommit` callbacks. */
  private settle(ok: boolean): void {
    if (this.committed.length === 0) return;
    const then = this.committed;
    this.committed = [];
    for (const fn of then) fn(ok);
  }

  /** Commits the queue: a batch of one as it is (its own statement or transaction), else one transaction. */
  private readonly flush = (): void => {
    const batch = this.queue;
    this.queue = [];
    this.scheduled = false;
    if (batch.length === 1) {
      const p = batch[0]!;
      let result: unknown;
      try {
        result = p.run();
      } catch (err) {
        this.settle(false);
        p.reject(err);
        return;
      }
      this.settle(true);
      this.counted?.();
      p.resolve(result as never);
      return;
    }
    let results: unknown[];
    try {
      results = this.writeMany(batch);
    } catch (err) {
      this.settle(false);
      for (const p of batch) p.reject(err);
      return;
    }
    this.settle(true);
    this.counted?.();
    batch.forEach((p, i) => {
      const r = results[i];
      if (r instanceof Failed) p.reject(r.error);
      else p.resolve(r as never);
    });
  };
}

/** The INSERT's parameters, positional: journal id, key, body, late_for; the journal id again and the probed key (NULL: none). */
type Params = [string, string, string, string | null, string, string | null];

export class AppendBatcher {
  /** One row per written record: `[1]` if the probed key is recorded, `[null]` if not (or no probe). */
  private readonly insert: Statement<Params, [1 | null]>;
  private readonly select: Statement<[string, string], RecordRow>;
  private readonly writes: WriteQueue;
  private readonly rows: JournalRows;

  constructor(db: Database) {
    // The probe rides on the write: a scalar subquery in RETURNING, one lookup in the primary
    // key's index (it asks whether the key is recorded, not for its body: no table row read).
    // Positional parameters and rows as arrays: no object bound or built per append (one
    // interleaved run here: 1.12x the raw INSERT with the body's read and named parameters,
    // 1.03x this way; bench/insert-variants.ts, whose forms differ by less than its noise on
    // other runs). `.all()` steps the statement to its end, so SQLite's WAL hook (the automatic
    // checkpoint) runs as after any other commit, and checks the reset that ends it: `.get()` is
    // 5–8% faster here, but better-sqlite3 ignores the reset's answer after a row, and an
    // autocommitted append commits at that reset: a failed commit would be answered as written.
    this.insert = db
      .prepare<Params, [1 | null]>(`
        INSERT INTO records (run_id, key, body, late_for) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING
        RETURNING (SELECT 1 FROM records WHERE run_id = ? AND key = ?)`)
      .raw();
    this.select = db.prepare<[string, string], RecordRow>("SELECT key, body, late_for FROM records WHERE run_id = ? AND key = ?");
    this.writes = WriteQueue.of(db);
    this.rows = JournalRows.of(db);
  }

  /** Queues `record` for the next group commit; resolves once that commit returned. */
  append(journalId: string, record: StoredRecord, probe: string | undefined): Promise<AppendResult> {
    const body = toJson(record.body) ?? "null";
    return this.writes.write(runIdOfJournal(journalId), () => this.one(journalId, record, body, probe));
  }

  /** One append inside the current transaction (or autocommitted alone). */
  private one(journalId: string, record: StoredRecord, body: string, probeKey: string | undefined): AppendResult {
    const probe = probeKey ?? null;
    const lateFor = record.lateFor ?? null;
    const row = this.insert.all(journalId, record.key, body, lateFor, journalId, probe)[0];
    if (row) {
      // Written: the journal's kept rows (journal-rows.ts) take it once it is committed.
      const rows = this.rows;
      const checked = record.checked === true;
      this.writes.afterCommit((ok) => (ok ? rows.added(journalId, record.key, body, lateFor, checked) : rows.drop(journalId)));
      if (probe === null) return { written: true };
      // Found (a cancellation: rare): the whole record, read (write-once: it is the one probed).
      return { written: true, probed: row[0] === null ? null : this.probed(journalId, probe) };
    }
    // Lost the write-once race, or our own earlier attempt (its answer lost) wrote it.
    // Records are deleted only with their finished run (retention), so the one that won is here.
    const existing = this.select.get(journalId, record.key);
    if (!existing) throw new Error(`record "${record.key}" of run "${journalId}" was neither written nor found`);
    const stored = toRecord(existing);
    const probed = probe === null ? {} : { probed: this.probed(journalId, probe) };
    return sameBody(stored.body, record.body) ? { written: true, ...probed } : { written: false, existing: stored, ...probed };
  }

  private probed(journalId: string, key: string): StoredRecord | null {
    const row = this.select.get(journalId, key);
    return row ? toRecord(row) : null;
  }
}
