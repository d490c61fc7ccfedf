/**
 * The checks every runtime makes before a transaction is sent, so a bad one writes nothing and
 * says why: DynamoDB's limits (100 items, 4 MB, 400 KB an item), the journal's own item counted
 * in, no two writes to one key, every placeholder defined and every definition used.
 */
import { TransactValidationError } from "./errors.ts";
import { keyOfOp, keyText, type TxOp, type TxValue } from "./ops.ts";

/** DynamoDB's limit on items in one `TransactWriteItems`. */
export const TRANSACT_MAX_ITEMS = 100;
/** Items Waymark adds to each step's transaction: the step's journal record. */
export const TRANSACT_WAYMARK_ITEMS = 1;
/** DynamoDB's limit on one transaction's total size. */
export const TRANSACT_MAX_BYTES = 4 * 1024 * 1024;
/** DynamoDB's item size limit. */
export const ITEM_MAX_BYTES = 400 * 1024;

const OPS = new Set(["put", "update", "delete", "conditionCheck"]);
const PLACEHOLDER = /[:#][A-Za-z0-9_]+/g;

/**
 * Throws {@link TransactValidationError} naming the first problem. `keyNames` gives a table's
 * key attributes where the runtime knows them (the emulated tables); on DynamoDB they are read
 * from the other writes to the same table (a put alone is checked by DynamoDB itself).
 */
export function validateWrites(stepId: string, ops: readonly TxOp[], keyNames: (table: string) => readonly string[] | undefined = () => undefined): void {
  const fail = (problem: string): never => {
    throw new TransactValidationError(stepId, problem);
  };
  const max = TRANSACT_MAX_ITEMS - TRANSACT_WAYMARK_ITEMS;
  if (ops.length > max) fail(`${ops.length} items, over the ${max} a step may write (DynamoDB's ${TRANSACT_MAX_ITEMS} per transaction, one of them the step's journal record)`);
  let total = 0;
  ops.forEach((op, i) => {
    const where = `item ${i} (${op.op} on "${op.table}")`;
    if (!OPS.has(op.op)) fail(`item ${i}: unknown operation "${String(op.op)}"`);
    if (typeof op.table !== "string" || op.table.length === 0) fail(`item ${i}: a table name is required`);
    if (op.op === "put") {
      if (!isPlainObject(op.item)) fail(`${where}: \`item\` must be an object`);
      checkValues(op.item, `${where} item`, fail);
    } else {
      if (!isPlainObject(op.key) || Object.keys(op.key).length === 0 || Object.keys(op.key).length > 2) fail(`${where}: \`key\` must name the partition key (and the sort key)`);
      for (const [name, v] of Object.entries(op.key)) if (typeof v !== "string" && (typeof v !== "number" || !Number.isFinite(v))) fail(`${where}: key attribute "${name}" must be a string or a finite number`);
    }
    if (op.op === "update" && (typeof op.update !== "string" || op.update.trim() === "")) fail(`${where}: an update expression is required`);
    if (op.op === "conditionCheck" && (typeof op.condition !== "string" || op.condition.trim() === "")) fail(`${where}: a condition check needs a condition`);
    if (op.values) checkValues(op.values, `${where} values`, fail);
    checkPlaceholders(op, where, fail);
    const bytes = utf8(JSON.stringify(op));
    if (bytes > ITEM_MAX_BYTES) fail(`${where} is about ${bytes} bytes, over DynamoDB's item limit of ${ITEM_MAX_BYTES}`);
    total += bytes;
  });
  if (total > TRANSACT_MAX_BYTES) fail(`the transaction is about ${total} bytes, over DynamoDB's ${TRANSACT_MAX_BYTES} per transaction`);
  checkDistinctKeys(ops, keyNames, fail);
}

/** DynamoDB refuses two operations on one item in a transaction; so do we, before sending. */
function checkDistinctKeys(ops: readonly TxOp[], known: (table: string) => readonly string[] | undefined, fail: (p: string) => never): void {
  const names = new Map<string, readonly string[]>();
  for (const op of ops) {
    const given = known(op.table) ?? (op.op === "put" ? undefined : Object.keys(op.key).sort());
    if (given && !names.has(op.table)) names.set(op.table, given);
  }
  const seen = new Map<string, number>();
  ops.forEach((op, i) => {
    const key = keyOfOp(op, names.get(op.table));
    if (!key) return;
    const id = `${op.table}\u0000${keyText(key)}`;
    const first = seen.get(id);
    if (first !== undefined) fail(`items ${first} and ${i} both write ${keyText(key)} in "${op.table}": DynamoDB allows one operation per item in a transaction`);
    seen.set(id, i);
  });
}

function checkPlaceholders(op: TxOp, where: string, fail: (p: string) => never): void {
  const expressions = [op.condition, op.op === "update" ? op.update : undefined].filter((e): e is string => typeof e === "string");
  const used = new Set(expressions.flatMap((e) => e.match(PLACEHOLDER) ?? []));
  for (const p of used) {
    if (p.startsWith(":") && !(op.values && Object.hasOwn(op.values, p))) fail(`${where}: the expression uses ${p}, which \`values\` does not define`);
    if (p.startsWith("#") && !(op.names && Object.hasOwn(op.names, p))) fail(`${where}: the expression uses ${p}, which \`names\` does not define`);
  }
  for (const p of [...Object.keys(op.values ?? {}), ...Object.keys(op.names ?? {})]) {
    if (!/^[:#][A-Za-z0-9_]+$/.test(p)) fail(`${where}: placeholder "${p}" must be ":name" (values) or "#name" (names)`);
    if (!used.has(p)) fail(`${where}: ${p} is defined but no expression uses it (DynamoDB refuses unused placeholders)`);
  }
  for (const [p, name] of Object.entries(op.names ?? {})) if (typeof name !== "string" || name === "") fail(`${where}: ${p} must name an attribute`);
}

function checkValues(values: unknown, where: string, fail: (p: string) => never, depth = 0): void {
  if (depth > 32) fail(`${where}: nested more than 32 levels (DynamoDB's limit)`);
  if (values === null || typeof values === "string" || typeof values === "boolean") return;
  if (typeof values === "number") {
    if (!Number.isFinite(values)) fail(`${where}: ${values} is not a number DynamoDB stores`);
    return;
  }
  if (Array.isArray(values)) {
    for (const v of values as TxValue[]) checkValues(v, where, fail, depth + 1);
    return;
  }
  if (isPlainObject(values)) {
    for (const [k, v] of Object.entries(values)) {
      if (v === undefined) fail(`${where}: attribute "${k}" is undefined (leave it out, or use null)`);
      checkValues(v, `${where}.${k}`, fail, depth + 1);
    }
    return;
  }
  fail(`${where}: ${typeof values === "object" ? "a non-plain object (Date, Set, Map, binary…)" : typeof values} is not a value step.transact stores (strings, numbers, booleans, null, lists and maps)`);
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v) as unknown;
  return proto === Object.prototype || proto === null;
}

function utf8(text: string): number {
  return new TextEncoder().encode(text).length;
}
