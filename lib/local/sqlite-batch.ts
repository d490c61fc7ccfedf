/**
 * Group commit for the SQLite journal: appends made together — the branches of a `Promise.all`,
 * the items of a `step.map`, the records of several runs executing at once — are written in one
 * transaction, so one commit (one fsync with `durability: "full"`) covers them all.
 *
 * An append is queued, and the queue is written once no further append arrived during a turn of
 * the microtask queue: parallel branches of a workflow reach their appends within the same few
 * turns, while a sequential step pays two microtask turns and no timer. Every append keeps its
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
import { sameBody } from "../core/retried-writes.ts";
import type { Database } from "./database.ts";
import { type RecordRow, toJson, toRecord } from "./sqlite-rows.ts";

interface Pending {
  journalId: string;
  record: StoredRecord;
  body: string;
  probe: string | undefined;
  resolve: (r: AppendResult) => void;
  reject: (e: unknown) => void;
}

/** An append of a batch that failed alone (its statement), the transaction going on without it. */
class Failed {
  constructor(readonly error: unknown) {}
}

interface Params {
  j: string;
  k: string;
  b: string;
  l: string | null;
  p: string | null;
}

/** What the INSERT returns when it wrote the row: the probed record's body (NULL: none, or no probe). */
interface Written {
  pb: string | null;
}

export class AppendBatcher {
  private readonly insert: Statement<[Params], Written>;
  private readonly select: Statement<[string, string], RecordRow>;
  private readonly writeMany: (batch: readonly Pending[]) => Array<AppendResult | Failed>;
  private queue: Pending[] = [];
  private seen = 0;
  private scheduled = false;

  constructor(db: Database) {
    // The probe rides on the write: a scalar subquery in RETURNING, one b-tree lookup in the
    // same statement. `.all()` steps the statement to its end, so SQLite's WAL hook (the
    // automatic checkpoint) runs as after any other commit.
    this.insert = db.prepare<[Params], Written>(`
      INSERT INTO records (run_id, key, body, late_for) VALUES (@j, @k, @b, @l) ON CONFLICT DO NOTHING
      RETURNING (SELECT body FROM records WHERE run_id = @j AND key = @p) AS pb`);
    this.select = db.prepare<[string, string], RecordRow>("SELECT key, body, late_for FROM records WHERE run_id = ? AND key = ?");
    // IMMEDIATE: the write lock first, so a writer in another process cannot slip in between.
    this.writeMany = db.transaction((batch: readonly Pending[]) =>
      batch.map((p) => {
        try {
          return this.one(p);
        } catch (err) {
          // A statement's own failure leaves the transaction open: only that append fails. One
          // that ended the transaction (an I/O error) fails them all, as nothing was kept.
          if (!db.inTransaction) throw err;
          return new Failed(err);
        }
      }),
    ).immediate;
  }

  /** Queues `record` for the next group commit; resolves once that commit returned. */
  append(journalId: string, record: StoredRecord, probe: string | undefined): Promise<AppendResult> {
    const body = toJson(record.body) ?? "null";
    return new Promise<AppendResult>((resolve, reject) => {
      this.queue.push({ journalId, record, body, probe, resolve, reject });
      if (this.scheduled) return;
      this.scheduled = true;
      this.seen = 0;
      queueMicrotask(this.tick);
    });
  }

  /** Waits while appends keep arriving (one more microtask turn each time), then writes them. */
  private readonly tick = (): void => {
    if (this.queue.length > this.seen) {
      this.seen = this.queue.length;
      queueMicrotask(this.tick);
      return;
    }
    const batch = this.queue;
    this.queue = [];
    this.scheduled = false;
    let results: Array<AppendResult | Failed>;
    try {
      results = batch.length === 1 ? [this.one(batch[0]!)] : this.writeMany(batch);
    } catch (err) {
      for (const p of batch) p.reject(err);
      return;
    }
    batch.forEach((p, i) => {
      const r = results[i]!;
      if (r instanceof Failed) p.reject(r.error);
      else p.resolve(r);
    });
  };

  /** One append inside the current transaction (or autocommitted alone). */
  private one(p: Pending): AppendResult {
    const probe = p.probe ?? null;
    const rows = this.insert.all({ j: p.journalId, k: p.record.key, b: p.body, l: p.record.lateFor ?? null, p: probe });
    const row = rows[0];
    if (row) {
      if (probe === null) return { written: true };
      // Found (a cancellation: rare): the whole record, read again (write-once: it is the same).
      return { written: true, probed: row.pb === null ? null : this.probed(p.journalId, probe) };
    }
    // Lost the write-once race, or our own earlier attempt (its answer lost) wrote it.
    // Records are deleted only with their finished run (retention), so the one that won is here.
    const existing = this.select.get(p.journalId, p.record.key);
    if (!existing) throw new Error(`record "${p.record.key}" of run "${p.journalId}" was neither written nor found`);
    const stored = toRecord(existing);
    const probed = probe === null ? {} : { probed: this.probed(p.journalId, probe) };
    return sameBody(stored.body, p.record.body) ? { written: true, ...probed } : { written: false, existing: stored, ...probed };
  }

  private probed(journalId: string, key: string): StoredRecord | null {
    const row = this.select.get(journalId, key);
    return row ? toRecord(row) : null;
  }
}
