/**
 * Flow control on the journal table, the primitives the shared rules (lib/core/journal-base.ts)
 * run on: a scope's slots are items `pk = flow#<scope>`, `sk = slot#<i>` (the run holding it and
 * until when); its queue is items `pk = flowq#<scope>`, `sk = <at, padded>#<runId>`. Every change
 * is one conditional request: a slot is put only if it is free, expired, or already this run's;
 * a run is queued only while it waits for that queue (a transaction with a check of its meta
 * item); a queued run is taken off by the one delete that finds it.
 */
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { waitingInQueue } from "../core/flow-control.ts";
import type { QueuedRun, SlotEntry, SlotHolder } from "../ports.ts";
import { ATTR, META_SK, n, pad, pkOf, s } from "./dynamodb-codec.ts";
import { retryConflicts } from "./dynamodb-client.ts";
import { isErrorNamed } from "./errors.ts";
import { dynamodbSdk } from "./sdk.ts";

const slotsPk = (scope: string) => `flow#${scope}`;
const queuePk = (scope: string) => `flowq#${scope}`;
const queueSk = (runId: string, at: number) => `${pad(Math.max(0, Math.floor(at)))}#${runId}`;

/** Every held slot of a scope (expired ones too). */
export async function slots(client: DynamoDBClient, table: string, scope: string): Promise<SlotEntry[]> {
  const { QueryCommand } = await dynamodbSdk();
  const out = await retryConflicts(() => client.send(new QueryCommand({ TableName: table, KeyConditionExpression: "pk = :pk", ExpressionAttributeValues: { ":pk": s(slotsPk(scope)) }, ConsistentRead: true })));
  return (out.Items ?? []).flatMap((i) => {
    const index = Number((i.sk?.S ?? "").slice("slot#".length));
    const runId = i.runId?.S;
    return runId === undefined || !Number.isInteger(index) ? [] : [{ index, runId, expiresAt: Number(i.expiresAt?.N ?? 0) }];
  });
}

/** Slot `index` for `holder`, if it is free, expired by `now`, or the holder's already (its expiry never moves earlier). */
export async function putSlot(client: DynamoDBClient, table: string, scope: string, index: number, holder: SlotHolder, now: number): Promise<boolean> {
  const { PutItemCommand } = await dynamodbSdk();
  try {
    await retryConflicts(() => client.send(new PutItemCommand({
      TableName: table,
      Item: { pk: s(slotsPk(scope)), sk: s(`slot#${index}`), runId: s(holder.runId), expiresAt: n(holder.expiresAt) },
      // The holder's own slot only moves later: a late retry, or an invocation paused past its lease, never shortens it.
      ConditionExpression: "attribute_not_exists(pk) OR expiresAt <= :now OR (runId = :me AND expiresAt <= :exp)",
      ExpressionAttributeValues: { ":now": n(now), ":me": s(holder.runId), ":exp": n(holder.expiresAt) },
      ReturnValuesOnConditionCheckFailure: "ALL_OLD",
    })));
    return true;
  } catch (err) {
    // Refused: another run's, or the holder's own for longer already (then it holds it).
    if (isErrorNamed(err, "ConditionalCheckFailedException")) return (err as { Item?: Record<string, { S?: string }> }).Item?.runId?.S === holder.runId;
    throw err;
  }
}

/** Deletes slot `index` if `runId` holds it. */
export async function deleteSlot(client: DynamoDBClient, table: string, scope: string, index: number, runId: string): Promise<void> {
  const { DeleteItemCommand } = await dynamodbSdk();
  await retryConflicts(() => client.send(new DeleteItemCommand({ TableName: table, Key: { pk: s(slotsPk(scope)), sk: s(`slot#${index}`) }, ConditionExpression: "runId = :me", ExpressionAttributeValues: { ":me": s(runId) } }))).catch((err: unknown) => {
    if (!isErrorNamed(err, "ConditionalCheckFailedException")) throw err;
  });
}

export async function enqueue(client: DynamoDBClient, table: string, scope: string, runId: string, at: number): Promise<void> {
  const { TransactWriteItemsCommand } = await dynamodbSdk();
  // One transaction with a check of the run's meta item: an invocation that lost its lease
  // long ago (paused, its answers late) cannot queue a run that was taken again since (a
  // canceller, the next invocation) or has ended — only one that waits for this queue.
  const command = new TransactWriteItemsCommand({
    TransactItems: [
      { Put: { TableName: table, Item: { pk: s(queuePk(scope)), sk: s(queueSk(runId, at)), runId: s(runId) } } },
      {
        ConditionCheck: {
          TableName: table,
          Key: { pk: s(pkOf(runId)), sk: s(META_SK) },
          ConditionExpression: "#st IN (:queued, :suspended) AND #wf = :wf",
          ExpressionAttributeNames: { "#st": ATTR.status, "#wf": ATTR.waitingFor },
          ExpressionAttributeValues: { ":queued": s("queued"), ":suspended": s("suspended"), ":wf": s(waitingInQueue(scope)) },
        },
      },
    ],
  });
  for (let attempt = 1; ; attempt++) {
    try {
      await client.send(command);
      return;
    } catch (err) {
      if (!isErrorNamed(err, "TransactionCanceledException")) throw err;
      const codes = ((err as { CancellationReasons?: Array<{ Code?: string } | undefined> }).CancellationReasons ?? []).map((r) => r?.Code ?? "None");
      if (codes[1] === "ConditionalCheckFailed") return; // it does not wait here: nothing to queue
      if (!codes.includes("TransactionConflict") || attempt >= ENQUEUE_ATTEMPTS) throw err;
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 20 * 2 ** attempt));
    }
  }
}

/** How often an enqueue that met a concurrent write to the run's meta item is sent again. */
const ENQUEUE_ATTEMPTS = 5;

/** The oldest queued run, left in the queue. */
export async function peek(client: DynamoDBClient, table: string, scope: string): Promise<QueuedRun | undefined> {
  const { QueryCommand } = await dynamodbSdk();
  const out = await retryConflicts(() => client.send(new QueryCommand({ TableName: table, KeyConditionExpression: "pk = :pk", ExpressionAttributeValues: { ":pk": s(queuePk(scope)) }, ConsistentRead: true, Limit: 1 })));
  const first = out.Items?.[0];
  const runId = first?.runId?.S;
  return runId === undefined ? undefined : { runId, at: Number((first?.sk?.S ?? "").split("#")[0]) };
}

/** Takes one run off the queue wherever it is: its item's key is known, and the delete that finds it wins. */
export async function dequeueRun(client: DynamoDBClient, table: string, scope: string, run: QueuedRun): Promise<string | undefined> {
  const { DeleteItemCommand } = await dynamodbSdk();
  try {
    await retryConflicts(() => client.send(new DeleteItemCommand({ TableName: table, Key: { pk: s(queuePk(scope)), sk: s(queueSk(run.runId, run.at)) }, ConditionExpression: "attribute_exists(pk)" })));
    return run.runId;
  } catch (err) {
    if (!isErrorNamed(err, "ConditionalCheckFailedException")) throw err;
    return undefined;
  }
}

const latestKey = (scope: string) => ({ pk: s(`flowl#${scope}`), sk: s("latest") });

/** Records the latest start of a scope; a later one (by time, then run id) is never overwritten. */
export async function markLatest(client: DynamoDBClient, table: string, scope: string, runId: string, at: number): Promise<void> {
  const { PutItemCommand } = await dynamodbSdk();
  try {
    await retryConflicts(() => client.send(new PutItemCommand({
      TableName: table,
      Item: { ...latestKey(scope), runId: s(runId), at: n(at) },
      ConditionExpression: "attribute_not_exists(pk) OR #at < :at OR (#at = :at AND runId <= :me)",
      ExpressionAttributeNames: { "#at": "at" },
      ExpressionAttributeValues: { ":at": n(at), ":me": s(runId) },
    })));
  } catch (err) {
    if (!isErrorNamed(err, "ConditionalCheckFailedException")) throw err;
  }
}

export async function latest(client: DynamoDBClient, table: string, scope: string): Promise<string | undefined> {
  const { GetItemCommand } = await dynamodbSdk();
  const out = await retryConflicts(() => client.send(new GetItemCommand({ TableName: table, Key: latestKey(scope), ConsistentRead: true })));
  return out.Item?.runId?.S;
}
