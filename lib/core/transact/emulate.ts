/**
 * One transaction over emulated tables (the memory store's maps, the SQLite store's table): every
 * condition is checked against the items as they were before it, then every write is computed;
 * the caller applies the writes in the same atomic step as the journal record, or nothing.
 * Pure: the caller gives the reader and does the writing.
 */
import { TransactValidationError } from "./errors.ts";
import { ExpressionDataError, applyUpdate, evaluate } from "./expr-eval.ts";
import { parseCondition, parseUpdate } from "./expr-parse.ts";
import { keyOfOp, type TxItem, type TxKey, type TxOp } from "./ops.ts";
import { validateWrites } from "./validate.ts";

/** The key attributes of each emulated table: `{ stock: ["sku"], ledger: ["pk", "sk"] }`. */
export type TableKeys = Readonly<Record<string, readonly [string] | readonly [string, string]>>;

/** What the emulated transaction does: the writes to make (`item: undefined` deletes), or the item whose condition failed. */
export type EmulatedOutcome =
  | { ok: true; writes: Array<{ table: string; key: TxKey; item: TxItem | undefined }> }
  | { ok: false; index: number; reason: "ConditionalCheckFailed" };

/** Checks a table is declared and a key is exactly its key attributes; returns the key. */
export function checkKey(tables: TableKeys, table: string, key: TxKey | undefined, where: string): TxKey {
  const names = keyNamesOf(tables, table, where);
  const given = key ? Object.keys(key).sort() : [];
  if (!key || given.length !== names.length || !names.every((n) => typeof key[n] === "string" || typeof key[n] === "number")) {
    throw new TransactValidationError(where, `the key of "${table}" is ${names.join(" + ")}, given ${key ? JSON.stringify(key) : "an item without it"}`);
  }
  return Object.fromEntries(names.map((n) => [n, key[n] as string | number]));
}

/** A declared table's key attributes; an undeclared table is refused (DynamoDB: ResourceNotFoundException). */
export function keyNamesOf(tables: TableKeys, table: string, where: string): readonly string[] {
  const names = tables[table];
  if (!names) throw new TransactValidationError(where, `table "${table}" is not one of this runtime's tables (declared: ${Object.keys(tables).join(", ") || "none"}); declare it in the runtime's \`tables\` option`);
  return names;
}

/**
 * Runs `ops` against the tables as `read` shows them. Validation (expressions, keys, limits)
 * throws before anything is decided; a failed condition is an answer, not an error.
 */
export function emulateTransaction(stepId: string, tables: TableKeys, ops: readonly TxOp[], read: (table: string, key: TxKey) => TxItem | undefined): EmulatedOutcome {
  validateWrites(stepId, ops, (table) => tables[table]);
  const writes: Array<{ table: string; key: TxKey; item: TxItem | undefined }> = [];
  let refused: number | undefined;
  ops.forEach((op, index) => {
    const key = checkKey(tables, op.table, keyOfOp(op, tables[op.table]), stepId);
    const before = read(op.table, key);
    const values = op.values ?? {};
    const names = op.names ?? {};
    try {
      const condition = op.condition === undefined ? undefined : parseCondition(op.condition, names);
      // Parse everything first: a malformed expression anywhere refuses the whole transaction.
      const update = op.op === "update" ? parseUpdate(op.update, names) : undefined;
      if (refused === undefined && condition && !evaluate(condition, before, values)) refused = index;
      if (refused !== undefined) return; // cancelled: nothing more to compute
      if (op.op === "put") writes.push({ table: op.table, key, item: structuredClone(op.item) });
      else if (op.op === "delete") writes.push({ table: op.table, key, item: undefined });
      else if (update) writes.push({ table: op.table, key, item: applyUpdate(update, before, key, values) });
    } catch (err) {
      if (err instanceof ExpressionDataError) throw new TransactValidationError(stepId, `item ${index} (${op.op} on "${op.table}"): ${err.message}`);
      throw err; // UnsupportedExpressionError: the expression is outside the emulated subset
    }
  });
  return refused === undefined ? { ok: true, writes } : { ok: false, index: refused, reason: "ConditionalCheckFailed" };
}
