/**
 * `step.transact` on DynamoDB: the user's writes and the step's journal record in ONE
 * `TransactWriteItems` — the user's items first (their positions are the step's `tx.*` calls),
 * the record last, as a Put conditional on `attribute_not_exists(pk)` (the write-once append of
 * `dynamodb-store.ts`, the same item). Values are plain JavaScript values marshalled here, as
 * the DocumentClient does.
 *
 * How an answer is read (`CancellationReasons` are item by item, in request order):
 *
 *   success                          written (also a resend within the token's 10 minutes)
 *   the record's condition failed    a record is there: ours (a resend after the window) -> written;
 *                                    another invocation's -> `existing` (the engine's fence)
 *   a user item's condition failed   refused: that item's index (nothing was written)
 *   TransactionConflict, throttling  TransactConflictError (retried by the step's policy)
 *   a validation reason or error     TransactValidationError (nothing was written)
 *
 * The record is looked at before the user's conditions: a resend of our own applied
 * transaction finds its own effects, and must not read them as a failed condition.
 */
import { createHash } from "node:crypto";
import type { AttributeValue, DynamoDBClient, TransactWriteItem } from "@aws-sdk/client-dynamodb";
import type { StoredRecord, TransactResult } from "../ports.ts";
import { sameBody } from "../core/retried-writes.ts";
import { TransactConflictError, TransactValidationError } from "../core/transact/errors.ts";
import type { TxOp, TxValue } from "../core/transact/ops.ts";
import { ITEM_MAX_BYTES } from "../core/transact/validate.ts";
import { decodeRecord, itemSize, pkOf, recordItem, s, writeStamp, type Item } from "./dynamodb-codec.ts";
import { isErrorNamed } from "./errors.ts";
import { dynamodbSdk } from "./sdk.ts";

const RETRYABLE_REASONS = new Set(["TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded"]);
const IN_PROGRESS_ATTEMPTS = 5;

interface CancellationReason {
  Code?: string;
  Message?: string;
  Item?: Item;
}

/** Write stamps by request id, so a resend sends exactly the same request (else `IdempotentParameterMismatch`). */
const stamps = new Map<string, number>();

/** DynamoDB's `ClientRequestToken` (1–36 characters) for a request id: the same for every resend. */
export function clientRequestToken(requestId: string): string {
  return createHash("sha256").update(requestId).digest("hex").slice(0, 36);
}

export async function transactRecord(client: DynamoDBClient, journalTable: string, journalId: string, record: StoredRecord, ops: readonly TxOp[], requestId: string): Promise<TransactResult> {
  const stepId = (record.body as { stepId?: string }).stepId ?? record.key;
  const items = ops.map((op, i) => {
    if (op.table === journalTable) throw new TransactValidationError(stepId, `item ${i} writes the journal's own table "${journalTable}"; step.transact writes your tables only`);
    return userItem(op, stepId, i);
  });
  let stamp = stamps.get(requestId);
  if (stamp === undefined) {
    stamp = writeStamp();
    stamps.set(requestId, stamp);
    if (stamps.size > 1_000) stamps.delete(stamps.keys().next().value as string);
  }
  items.push({
    Put: {
      TableName: journalTable,
      Item: recordItem(journalId, record, stamp),
      ConditionExpression: "attribute_not_exists(pk)",
      ReturnValuesOnConditionCheckFailure: "ALL_OLD",
    },
  });
  const { TransactWriteItemsCommand } = await dynamodbSdk();
  const command = new TransactWriteItemsCommand({ TransactItems: items, ClientRequestToken: clientRequestToken(requestId) });
  for (let attempt = 1; ; attempt++) {
    try {
      await client.send(command);
      return { written: true };
    } catch (err) {
      // The same token's first request is still being applied: its outcome is ours, wait for it.
      if (isErrorNamed(err, "TransactionInProgressException") && attempt < IN_PROGRESS_ATTEMPTS) {
        await new Promise((r) => setTimeout(r, 50 * 2 ** attempt));
        continue;
      }
      return answer(err, client, journalTable, journalId, record, ops.length, stepId);
    }
  }
}

async function answer(err: unknown, client: DynamoDBClient, table: string, journalId: string, record: StoredRecord, users: number, stepId: string): Promise<TransactResult> {
  if (isErrorNamed(err, "TransactionCanceledException")) {
    const reasons = ((err as { CancellationReasons?: CancellationReason[] }).CancellationReasons ?? []).map((r) => r ?? {});
    const mine = reasons[users];
    if (mine?.Code === "ConditionalCheckFailed") {
      const existing = mine.Item ? decodeRecord(mine.Item) : await readRecord(client, table, journalId, record.key);
      if (!existing) throw err;
      return sameBody(existing.body, record.body) ? { written: true } : { written: false, existing };
    }
    const codes = reasons.map((r) => r.Code ?? "None");
    if (codes.some((c) => RETRYABLE_REASONS.has(c))) throw new TransactConflictError(stepId, codes);
    const failed = codes.findIndex((c) => c === "ConditionalCheckFailed");
    if (failed >= 0 && failed < users) return { written: false, refused: { index: failed, reason: "ConditionalCheckFailed" } };
    const invalid = reasons.findIndex((r) => r.Code !== undefined && r.Code !== "None");
    if (invalid >= 0) throw new TransactValidationError(stepId, `item ${invalid}: ${reasons[invalid]?.Code}${reasons[invalid]?.Message ? ` (${reasons[invalid]?.Message})` : ""}`);
    throw err;
  }
  if (isErrorNamed(err, "ValidationException") || isErrorNamed(err, "ResourceNotFoundException")) {
    throw new TransactValidationError(stepId, `DynamoDB refused the transaction: ${(err as Error).message}`);
  }
  throw err;
}

async function readRecord(client: DynamoDBClient, table: string, journalId: string, key: string): Promise<StoredRecord | undefined> {
  const { GetItemCommand } = await dynamodbSdk();
  const out = await client.send(new GetItemCommand({ TableName: table, Key: { pk: s(pkOf(journalId)), sk: s(key) }, ConsistentRead: true }));
  return out.Item && decodeRecord(out.Item);
}

function userItem(op: TxOp, stepId: string, index: number): TransactWriteItem {
  const expression = {
    ...(op.condition === undefined ? {} : { ConditionExpression: op.condition }),
    ...(op.names && Object.keys(op.names).length > 0 ? { ExpressionAttributeNames: { ...op.names } } : {}),
    ...(op.values && Object.keys(op.values).length > 0 ? { ExpressionAttributeValues: marshallMap(op.values) } : {}),
  };
  switch (op.op) {
    case "put": {
      const item = marshallMap(op.item);
      const size = itemSize(item);
      if (size > ITEM_MAX_BYTES) throw new TransactValidationError(stepId, `item ${index} is ${size} bytes, over DynamoDB's item limit of ${ITEM_MAX_BYTES}`);
      return { Put: { TableName: op.table, Item: item, ...expression } };
    }
    case "update":
      return { Update: { TableName: op.table, Key: marshallMap(op.key), UpdateExpression: op.update, ...expression } };
    case "delete":
      return { Delete: { TableName: op.table, Key: marshallMap(op.key), ...expression } };
    case "conditionCheck":
      return { ConditionCheck: { TableName: op.table, Key: marshallMap(op.key), ConditionExpression: op.condition, ...expression } };
  }
}

/** Plain values as DynamoDB attribute values (what the DocumentClient's marshaller does for these types). */
export function marshall(value: TxValue): AttributeValue {
  if (value === null) return { NULL: true };
  if (typeof value === "string") return { S: value };
  if (typeof value === "number") return { N: String(value) };
  if (typeof value === "boolean") return { BOOL: value };
  if (Array.isArray(value)) return { L: (value as readonly TxValue[]).map(marshall) };
  return { M: marshallMap(value as Readonly<Record<string, TxValue>>) };
}

function marshallMap(values: Readonly<Record<string, TxValue>>): Record<string, AttributeValue> {
  return Object.fromEntries(Object.entries(values).map(([k, v]) => [k, marshall(v)]));
}

/** An item read back from DynamoDB as plain values (for tests and dev reads). */
export function unmarshall(item: Record<string, AttributeValue>): Record<string, TxValue> {
  const one = (v: AttributeValue): TxValue => {
    if (v.S !== undefined) return v.S;
    if (v.N !== undefined) return Number(v.N);
    if (v.BOOL !== undefined) return v.BOOL;
    if (v.NULL !== undefined) return null;
    if (v.L !== undefined) return v.L.map(one);
    if (v.M !== undefined) return unmarshall(v.M);
    throw new TypeError(`attribute type ${Object.keys(v)[0]} is not one step.transact reads back`);
  };
  return Object.fromEntries(Object.entries(item).map(([k, v]) => [k, one(v)]));
}
