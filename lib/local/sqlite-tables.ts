/**
 * The local runtime's stand-in for your own DynamoDB tables: a table `user_items` in the journal
 * file (one row per item, its key as text, the item as JSON), written by `step.transact` in the
 * SAME SQLite transaction as the step's journal record, and read or seeded through
 * `runtime.tables` for development. Expressions are evaluated by the emulator in
 * `lib/core/transact/` (a subset of DynamoDB's language; anything outside it is refused).
 * Retention never touches these rows: they are your data, not a run's.
 */
import type { Statement } from "better-sqlite3";
import type { StoredRecord, TransactResult } from "../ports.ts";
import { sameBody } from "../core/retried-writes.ts";
import { checkKey, emulateTransaction, keyNamesOf, type TableKeys } from "../core/transact/emulate.ts";
import { keyOfOp, keyText, type TxItem, type TxKey, type TxOp } from "../core/transact/ops.ts";
import { validateWrites } from "../core/transact/validate.ts";
import type { Database } from "./database.ts";
import { toRecord, type RecordRow } from "./sqlite-rows.ts";

/**
 * Emulated user tables in the journal file; `keys` declares each one's key attributes.
 *
 * @example
 * ```ts
 * const rt = createLocalRuntime({ workflows: [orderFlow], tables: { stock: ["sku"] } });
 * rt.tables.put("stock", { sku: "A1", available: 5 });
 * console.log(rt.tables.get("stock", { sku: "A1" })); // { sku: "A1", available: 5 }
 * ```
 */
export class SqliteTables {
  private readonly select: Statement<[string, string], { item: string }>;
  private readonly selectAll: Statement<[string], { item: string }>;
  private readonly upsert: Statement<[string, string, string]>;
  private readonly remove: Statement<[string, string]>;
  private readonly transact: (journalId: string, record: StoredRecord, ops: readonly TxOp[]) => TransactResult;

  constructor(
    db: Database,
    readonly keys: TableKeys = {},
  ) {
    // Created on first use, beside the journal's own tables; no schema version of its own.
    db.exec("CREATE TABLE IF NOT EXISTS user_items (table_name TEXT NOT NULL, key TEXT NOT NULL, item TEXT NOT NULL, PRIMARY KEY (table_name, key))");
    this.select = db.prepare("SELECT item FROM user_items WHERE table_name = ? AND key = ?");
    this.selectAll = db.prepare("SELECT item FROM user_items WHERE table_name = ? ORDER BY key");
    this.upsert = db.prepare("INSERT INTO user_items (table_name, key, item) VALUES (?, ?, ?) ON CONFLICT (table_name, key) DO UPDATE SET item = excluded.item");
    this.remove = db.prepare("DELETE FROM user_items WHERE table_name = ? AND key = ?");
    const selectRecord = db.prepare<[string, string], RecordRow>("SELECT key, body, late_for FROM records WHERE run_id = ? AND key = ?");
    const insertRecord = db.prepare<[string, string, string]>("INSERT INTO records (run_id, key, body) VALUES (?, ?, ?)");
    // IMMEDIATE: the write lock before the first read, so no other process decides in between.
    const transact = db.transaction((journalId: string, record: StoredRecord, ops: readonly TxOp[]): TransactResult => {
      const row = selectRecord.get(journalId, record.key);
      if (row) {
        const existing = toRecord(row);
        return sameBody(existing.body, record.body) ? { written: true } : { written: false, existing };
      }
      const stepId = (record.body as { stepId?: string }).stepId ?? record.key;
      const outcome = emulateTransaction(stepId, this.keys, ops, (table, key) => this.read(table, key));
      if (!outcome.ok) return { written: false, refused: { index: outcome.index, reason: outcome.reason } };
      for (const w of outcome.writes) {
        if (w.item === undefined) this.remove.run(w.table, keyText(w.key));
        else this.upsert.run(w.table, keyText(w.key), JSON.stringify(w.item));
      }
      insertRecord.run(journalId, record.key, JSON.stringify(record.body));
      return { written: true };
    });
    this.transact = transact.immediate;
  }

  /** The item with `key` in `table`, or undefined. */
  get(table: string, key: TxKey): TxItem | undefined {
    return this.read(table, checkKey(this.keys, table, key, "tables.get"));
  }

  /** Seeds (or replaces) an item, outside any run: development data. */
  put(table: string, item: TxItem): void {
    validateWrites("tables.put", [{ op: "put", table, item }], (t) => this.keys[t]);
    const key = checkKey(this.keys, table, keyOfOp({ op: "put", table, item }, this.keys[table]), "tables.put");
    this.upsert.run(table, keyText(key), JSON.stringify(item));
  }

  /** Every item of `table`, in key order. */
  scan(table: string): TxItem[] {
    keyNamesOf(this.keys, table, "tables.scan");
    return this.selectAll.all(table).map((r) => JSON.parse(r.item) as TxItem);
  }

  /** `step.transact`'s writes and record, in one SQLite transaction (see {@link SqliteJournalStore.transactRecord}). */
  commit(journalId: string, record: StoredRecord, ops: readonly TxOp[]): TransactResult {
    return this.transact(journalId, record, ops);
  }

  private read(table: string, key: TxKey): TxItem | undefined {
    const row = this.select.get(table, keyText(key));
    return row && (JSON.parse(row.item) as TxItem);
  }
}
