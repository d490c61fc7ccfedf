/**
 * Evaluates the expression subset of expr-parse.ts against an item, as DynamoDB does:
 *
 * - with a missing attribute, or between values of different types, `<>` is true and every
 *   other comparison false; `<`, `<=`, `>`, `>=` order numbers and strings only (strings by UTF-16 code
 *   units, which agrees with DynamoDB's UTF-8 byte order outside astral characters);
 *   `=` and `<>` compare any two values of one type, lists and maps deeply;
 * - `begins_with` holds for a string attribute that starts with a string value;
 * - an update's right-hand sides all read the item as it was before the update; `+` and `-`
 *   need numbers, and a missing attribute there is an error (DynamoDB: "the provided expression
 *   refers to an attribute that does not exist"); `ADD` to a missing attribute sets it; `SET`,
 *   `REMOVE` and `ADD` of a map's attribute need the map to exist; key attributes cannot change.
 *
 * Errors in the data (not in the expression's form) are {@link TransactValidationError}s, as
 * DynamoDB answers them with a ValidationException that writes nothing.
 */
import type { TxItem, TxValue } from "./ops.ts";
import { type Condition, ExpressionDataError, type Operand, type Path, type SetValue, type Term, type UpdateActions } from "./expr-parse.ts";

type Item = Record<string, TxValue>;
type Values = Readonly<Record<string, TxValue>>;

export { ExpressionDataError };

export function evaluate(c: Condition, item: TxItem | undefined, values: Values): boolean {
  switch (c.kind) {
    case "and":
      return evaluate(c.left, item, values) && evaluate(c.right, item, values);
    case "or":
      return evaluate(c.left, item, values) || evaluate(c.right, item, values);
    case "not":
      return !evaluate(c.inner, item, values);
    case "exists":
      return (read(item, c.path) !== undefined) !== c.negated;
    case "beginsWith": {
      const s = operand(c.subject, item, values);
      const p = operand(c.prefix, item, values);
      return typeof s === "string" && typeof p === "string" && s.startsWith(p);
    }
    case "compare": {
      const a = operand(c.left, item, values);
      const b = operand(c.right, item, values);
      if (a === undefined || b === undefined || typeOf(a) !== typeOf(b)) return c.op === "<>";
      if (c.op === "=") return deepEqual(a, b);
      if (c.op === "<>") return !deepEqual(a, b);
      if (!((typeof a === "number" && typeof b === "number") || (typeof a === "string" && typeof b === "string"))) return false;
      return c.op === "<" ? a < b : c.op === "<=" ? a <= b : c.op === ">" ? a > b : a >= b;
    }
  }
}

/** The item after `actions`; `key` names the key attributes, which may not change. */
export function applyUpdate(actions: UpdateActions, before: TxItem | undefined, key: TxItem, values: Values): Item {
  const after: Item = structuredClone({ ...before, ...key }) as Item;
  const touched = new Set<string>();
  const target = (path: Path) => {
    const id = path.join(".");
    if (path.length === 1 && path[0] !== undefined && path[0] in key) throw new ExpressionDataError(`cannot update attribute "${id}": it is part of the key`);
    for (const other of touched) if (other === id || other.startsWith(`${id}.`) || id.startsWith(`${other}.`)) throw new ExpressionDataError(`two document paths overlap: "${other}" and "${id}"`);
    touched.add(id);
  };
  for (const { path, value } of actions.set) {
    target(path);
    write(after, path, setValue(value, before, values));
  }
  for (const path of actions.remove) {
    target(path);
    remove(after, path);
  }
  for (const { path, value } of actions.add) {
    target(path);
    const add = operand(value, before, values);
    if (typeof add !== "number") throw new ExpressionDataError(`ADD ${path.join(".")}: only numbers are supported (sets are not)`);
    const current = read(before, path);
    if (current !== undefined && typeof current !== "number") throw new ExpressionDataError(`ADD ${path.join(".")}: the attribute is not a number`);
    write(after, path, (current ?? 0) + add);
  }
  return after;
}

function setValue(v: SetValue, item: TxItem | undefined, values: Values): TxValue {
  if (v.kind === "term") return need(term(v.term, item, values), v.term);
  const a = need(term(v.left, item, values), v.left);
  const b = need(term(v.right, item, values), v.right);
  if (typeof a !== "number" || typeof b !== "number") throw new ExpressionDataError(`"${v.op}" needs two numbers`);
  return v.op === "+" ? a + b : a - b;
}

function need(value: TxValue | undefined, t: Term): TxValue {
  if (value !== undefined) return value;
  const what = t.kind === "path" ? `attribute "${t.path.join(".")}"` : "a value";
  throw new ExpressionDataError(`the provided expression refers to ${what} that does not exist in the item`);
}

function term(t: Term, item: TxItem | undefined, values: Values): TxValue | undefined {
  if (t.kind === "ifNotExists") return read(item, t.path) ?? operand(t.fallback, item, values);
  return operand(t, item, values);
}

function operand(o: Operand, item: TxItem | undefined, values: Values): TxValue | undefined {
  return o.kind === "value" ? values[o.name] : read(item, o.path);
}

function read(item: TxItem | undefined, path: Path): TxValue | undefined {
  let at: TxValue | undefined = item as TxValue | undefined;
  for (const name of path) {
    if (at === null || typeof at !== "object" || Array.isArray(at)) return undefined;
    at = (at as Record<string, TxValue>)[name];
  }
  return at;
}

function parentOf(item: Item, path: Path): Record<string, TxValue> {
  let at: TxValue = item;
  for (const name of path.slice(0, -1)) {
    const next: TxValue | undefined = at !== null && typeof at === "object" && !Array.isArray(at) ? (at as Record<string, TxValue>)[name] : undefined;
    if (next === null || typeof next !== "object" || Array.isArray(next)) throw new ExpressionDataError(`the document path "${path.join(".")}" is invalid for update: "${name}" is not a map`);
    at = next;
  }
  return at as Record<string, TxValue>;
}

function write(item: Item, path: Path, value: TxValue): void {
  parentOf(item, path)[path[path.length - 1] ?? ""] = structuredClone(value);
}

function remove(item: Item, path: Path): void {
  if (path.length > 1 && read(item, path.slice(0, -1)) === undefined) return;
  delete parentOf(item, path)[path[path.length - 1] ?? ""];
}

function typeOf(v: TxValue): string {
  return v === null ? "null" : Array.isArray(v) ? "list" : typeof v;
}

function deepEqual(a: TxValue, b: TxValue): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  return ka.every((k) => Object.hasOwn(b, k) && deepEqual((a as Record<string, TxValue>)[k] as TxValue, (b as Record<string, TxValue>)[k] as TxValue));
}
