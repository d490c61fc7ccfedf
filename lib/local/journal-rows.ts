/**
 * The rows of recently read journals, kept in memory per connection, so that a run's next load
 * (the signal's delivery that reads the journal, then the invocation that replays it; a wake
 * after a sleep) reads none of its records from the file again. What is kept is the rows as
 * SQLite gave them (key, body text, late_for, size), and whether the engine wrote the row itself
 * (`checked`). Every load parses the bodies into objects of its own, so nothing user code does to
 * a replayed value can reach the next replay; only the body of an engine's own row with no object
 * in it is parsed once and shared, frozen (sqlite-rows.ts).
 *
 * When a kept journal is exact:
 * - Every write of records on this connection keeps it so once its commit returned: an append
 *   adds its row (the write queue's `afterCommit`: a batch that fails adds nothing), `markLate`
 *   and a `step.transact` drop the journal, retention drops what it deleted. A run created on
 *   this connection is kept as its empty journal (with the version read before the insert), so
 *   its first invocation reads no records from the file.
 * - A write by any other connection (another process on the file, another connection in this
 *   one) changes the connection's `PRAGMA data_version`. A journal is kept with the version read
 *   before the snapshot it was read from, and served only while the version is still that
 *   one, checked after the run's row was read: one foreign commit anywhere, and the next load
 *   of each journal reads the file (as it would without this cache).
 * - It belongs to the run created at `createdAt`: a run purged and created again under the same
 *   id is another journal.
 *
 * The rowid order the file gives (database.ts) is the order rows are added in: a row committed
 * after the journal was read has a higher rowid than every row before it.
 *
 * Bounded: at most `budget` characters of keys and bodies (with a per-row allowance), least
 * recently used first out; a journal over a quarter of it is not kept.
 */
import type { Statement } from "better-sqlite3";
import type { Database } from "./database.ts";

/** A record row as the journal query returns it: key, body, late_for, and the UTF-8 bytes of key and body (-1: not yet counted). */
export type RecordCells = [key: string, body: string, lateFor: string | null, bytes: number, checked?: true, parsed?: object | false];

interface Kept {
  createdAt: number;
  version: number;
  rows: RecordCells[];
  /** Characters of keys and bodies, with ROW_ALLOWANCE per row: the budget's measure. */
  weight: number;
}

/** What a row costs beyond its text (the array and the strings' headers), for the budget. */
const ROW_ALLOWANCE = 64;
/** The default budget: 32 MiB of record text. */
export const DEFAULT_JOURNAL_CACHE_CHARS = 32 * 1024 * 1024;

const caches = new WeakMap<Database, JournalRows>();
const budgets = new WeakMap<Database, number>();

/** Sets the budget of `db`'s cache (before its first store is made; `openLocalDatabase`'s `journalCacheBytes`). 0 keeps nothing. */
export function setJournalCacheBudget(db: Database, chars: number): void {
  if (!Number.isFinite(chars) || chars < 0) throw new TypeError(`journalCacheBytes must be a number ≥ 0, not ${String(chars)}`);
  budgets.set(db, Math.floor(chars));
}

export class JournalRows {
  private readonly dataVersion: Statement<[], number>;
  private readonly kept = new Map<string, Kept>();
  private weight = 0;

  /** The cache of `db` (one per connection, shared by every store over it, as the write queue is). */
  static of(db: Database): JournalRows {
    let cache = caches.get(db);
    if (!cache) caches.set(db, (cache = new JournalRows(db, budgets.get(db) ?? DEFAULT_JOURNAL_CACHE_CHARS)));
    return cache;
  }

  private constructor(
    db: Database,
    private readonly budget: number,
  ) {
    this.dataVersion = db.prepare<[], number>("PRAGMA data_version").pluck();
  }

  /** Whether this connection keeps any rows (a budget of 0 keeps none). */
  get keeps(): boolean {
    return this.budget > 0;
  }

  /** The connection's data version now: it changes when another connection commits. */
  version(): number {
    return this.dataVersion.get() as number;
  }

  /** The rows of `journalId` if kept and still exact (`version` read after the run's row); the caller must not change them. */
  get(journalId: string, createdAt: number, version: number): RecordCells[] | undefined {
    const kept = this.kept.get(journalId);
    if (!kept) return undefined;
    if (kept.version !== version || kept.createdAt !== createdAt) {
      this.drop(journalId);
      return undefined;
    }
    // Most recently used last.
    this.kept.delete(journalId);
    this.kept.set(journalId, kept);
    return kept.rows;
  }

  /** Keeps the rows of `journalId` as read in a snapshot taken after `version` was read. */
  fill(journalId: string, createdAt: number, version: number, rows: RecordCells[]): void {
    this.drop(journalId);
    let weight = 0;
    for (const row of rows) weight += row[0].length + row[1].length + ROW_ALLOWANCE;
    if (this.budget === 0 || weight > this.budget / 4) return;
    this.kept.set(journalId, { createdAt, version, rows, weight });
    this.weight += weight;
    this.evict();
  }

  /** A row this connection committed to `journalId` (called after the commit returned). */
  added(journalId: string, key: string, body: string, lateFor: string | null, checked = false): void {
    const kept = this.kept.get(journalId);
    if (!kept) return;
    // An engine's own row may come to hold its parsed body too (sqlite-rows.ts): counted twice.
    const weight = key.length + (checked ? 2 : 1) * body.length + ROW_ALLOWANCE;
    kept.rows.push(checked ? [key, body, lateFor, -1, true] : [key, body, lateFor, -1]);
    kept.weight += weight;
    this.weight += weight;
    if (kept.weight > this.budget / 4) this.drop(journalId);
    else this.evict();
  }

  /** Forgets `journalId` (its rows changed in place, or it was deleted). */
  drop(journalId: string): void {
    const kept = this.kept.get(journalId);
    if (!kept) return;
    this.kept.delete(journalId);
    this.weight -= kept.weight;
  }

  private evict(): void {
    if (this.weight <= this.budget) return; // the usual case: no iterator made per append
    for (const [journalId] of this.kept) {
      if (this.weight <= this.budget) return;
      this.drop(journalId);
    }
  }
}
