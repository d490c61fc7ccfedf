/**
 * What a `step.transact` body builds: writes to the user's own DynamoDB tables, in the shapes of
 * `TransactWriteItems` (Put, Update, Delete, ConditionCheck), with values as plain JavaScript
 * values (as DynamoDB's DocumentClient takes them) that each store marshals for itself.
 */

/** A value of an item attribute: JSON-like (strings, finite numbers, booleans, null, lists, maps). */
export type TxValue = string | number | boolean | null | readonly TxValue[] | { readonly [name: string]: TxValue };

/** A primary key: the partition key attribute (and the sort key attribute), strings or numbers. */
export type TxKey = Readonly<Record<string, string | number>>;

/** A whole item, key attributes included. */
export type TxItem = Readonly<Record<string, TxValue>>;

interface TxCommon {
  /** The user's table (its name as the function knows it, e.g. from an environment variable). */
  table: string;
  /** A condition expression; the transaction is cancelled if it does not hold. */
  condition?: string;
  /** `ExpressionAttributeNames`: `{ "#s": "status" }`. */
  names?: Readonly<Record<string, string>>;
  /** `ExpressionAttributeValues` as plain values: `{ ":n": 3 }`. */
  values?: Readonly<Record<string, TxValue>>;
}

/** Writes (replaces) a whole item. */
export interface TxPut extends TxCommon {
  item: TxItem;
}

/** Updates (or creates) the item with `key` by an update expression (`SET a = a - :n`). */
export interface TxUpdate extends TxCommon {
  key: TxKey;
  update: string;
}

/** Deletes the item with `key` (a missing item is no error unless `condition` says so). */
export interface TxDelete extends TxCommon {
  key: TxKey;
}

/** Checks a condition on the item with `key` without writing it. */
export interface TxConditionCheck extends TxCommon {
  key: TxKey;
  condition: string;
}

/** One write of the transaction, as the stores receive it. */
export type TxOp = ({ op: "put" } & TxPut) | ({ op: "update" } & TxUpdate) | ({ op: "delete" } & TxDelete) | ({ op: "conditionCheck" } & TxConditionCheck);

/**
 * What a `step.transact` body receives: each call adds one item to the transaction, in order
 * (a failed condition names the item by that position). Nothing is sent until the body returns.
 */
export interface Transaction {
  put(put: TxPut): void;
  update(update: TxUpdate): void;
  delete(del: TxDelete): void;
  conditionCheck(check: TxConditionCheck): void;
}

/**
 * A {@link Transaction} that collects the body's writes; after `seal()` (the body returned) a
 * late call throws instead of being silently left out.
 */
export function collectWrites(stepId: string): { tx: Transaction; ops: TxOp[]; seal(): void } {
  const ops: TxOp[] = [];
  let sealed = false;
  const add = (op: TxOp) => {
    if (sealed) throw new TypeError(`step "${stepId}": tx.${op.op}() called after the transact body returned; build every write before returning`);
    ops.push(structuredClone(op));
  };
  const tx: Transaction = {
    put: (w) => add({ op: "put", ...w }),
    update: (w) => add({ op: "update", ...w }),
    delete: (w) => add({ op: "delete", ...w }),
    conditionCheck: (w) => add({ op: "conditionCheck", ...w }),
  };
  return { tx, ops, seal: () => void (sealed = true) };
}

/** The key of an op's item: given for updates, deletes and checks; a put's from its item and `keyNames`. */
export function keyOfOp(op: TxOp, keyNames: readonly string[] | undefined): TxKey | undefined {
  if (op.op !== "put") return op.key;
  if (!keyNames) return undefined;
  const key: Record<string, string | number> = {};
  for (const name of keyNames) {
    const v = op.item[name];
    if (typeof v !== "string" && typeof v !== "number") return undefined;
    key[name] = v;
  }
  return key;
}

/** A stable text for a key: its attributes sorted by name. */
export function keyText(key: TxKey): string {
  return JSON.stringify(Object.keys(key).sort().map((k) => [k, key[k]]));
}
