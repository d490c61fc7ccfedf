/**
 * The test runtime's stand-in for your own DynamoDB tables: items in memory, by table and key,
 * written by `step.transact` in the same synchronous change as the step's journal record (see
 * {@link MemoryJournalStore.transactRecord}), and read or seeded by tests through
 * `rt.tables`. Expressions are evaluated by the emulator in `lib/core/transact/` (a subset of
 * DynamoDB's language; anything outside it is refused).
 */
import { checkKey, emulateTransaction, keyNamesOf, type EmulatedOutcome, type TableKeys } from "../core/transact/emulate.ts";
import { keyOfOp, keyText, type TxItem, type TxKey, type TxOp } from "../core/transact/ops.ts";
import { validateWrites } from "../core/transact/validate.ts";

/**
 * Emulated user tables: `tables` declares each one's key attributes.
 *
 * @example
 * ```ts
 * const rt = createTestRuntime({ workflows: [reserveFlow], tables: { stock: ["sku"], ledger: ["pk", "sk"] } });
 * rt.tables.put("stock", { sku: "A1", available: 5 });
 * await rt.start(reserveFlow, { runId: "o-1", input: { orderId: "o-1", sku: "A1", qty: 2 } });
 * expect(rt.tables.get("stock", { sku: "A1" })).toEqual({ sku: "A1", available: 3 });
 * ```
 */
export class MemoryTables {
  private readonly items = new Map<string, Map<string, TxItem>>();

  constructor(readonly keys: TableKeys = {}) {}

  /** The item with `key` in `table` (a copy), or undefined. */
  get(table: string, key: TxKey): TxItem | undefined {
    const item = this.items.get(table)?.get(keyText(checkKey(this.keys, table, key, "tables.get")));
    return item && structuredClone(item);
  }

  /** Seeds (or replaces) an item, outside any run: test and dev data. */
  put(table: string, item: TxItem): void {
    validateWrites("tables.put", [{ op: "put", table, item }], (t) => this.keys[t]);
    const key = checkKey(this.keys, table, keyOfOp({ op: "put", table, item }, this.keys[table]), "tables.put");
    this.write(table, key, item);
  }

  /** Every item of `table`, in key order. */
  scan(table: string): TxItem[] {
    keyNamesOf(this.keys, table, "tables.scan");
    return [...(this.items.get(table)?.entries() ?? [])].sort(([a], [b]) => (a < b ? -1 : 1)).map(([, item]) => structuredClone(item));
  }

  /** Decides a transaction against the items as they are now (nothing written yet). */
  decide(stepId: string, ops: readonly TxOp[]): EmulatedOutcome {
    return emulateTransaction(stepId, this.keys, ops, (table, key) => this.items.get(table)?.get(keyText(key)));
  }

  /** Applies a decided transaction's writes. */
  apply(outcome: Extract<EmulatedOutcome, { ok: true }>): void {
    for (const w of outcome.writes) {
      if (w.item === undefined) this.items.get(w.table)?.delete(keyText(w.key));
      else this.write(w.table, w.key, w.item);
    }
  }

  private write(table: string, key: TxKey, item: TxItem): void {
    let rows = this.items.get(table);
    if (!rows) this.items.set(table, (rows = new Map()));
    rows.set(keyText(key), structuredClone(item));
  }
}
