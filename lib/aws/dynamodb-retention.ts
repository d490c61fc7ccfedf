/**
 * Retention on DynamoDB: every item of a finished run goes when the run expires.
 *
 * In production the table's TTL deletes the meta item (free: TTL deletes consume no write
 * units) and the table's stream hands that `REMOVE` to `retention-stream.ts`, which calls
 * {@link deleteRunRecords} for the rest. `DynamoJournalStore.purgeExpired` does the same
 * work without TTL (tests, or an explicit sweep): {@link findExpiredRuns}, then the records,
 * then the meta item last, so a sweep that dies half-way is finished by the next one.
 *
 * Fencing a reused run id: a new run with the same id can exist while an old one's records are
 * deleted (TTL removed the meta, a caller started the id again before the stream caught up).
 * Each delete is therefore a conditional `DeleteItem`: the record must have been written before
 * the old run expired (`writtenAt < expiresAt`) and, if a newer incarnation's meta is present,
 * a minute before that one was created (the margin `createRun`'s own sweep uses). A new run's
 * record is never hit. `BatchWriteItem` takes no condition, so it cannot be used here; it would
 * not be cheaper either (a batch is billed per item, exactly as single deletes are).
 */
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { journalIdOf } from "../core/run/journal-ids.ts";
import { isErrorNamed } from "./errors.ts";
import { dynamodbSdk } from "./sdk.ts";
import { TERMINAL_STATUSES, type PurgedRun, type RunStatus } from "../ports.ts";
import { ATTR, META_SK, n, pad, pkOf, s, statusPartition, type Item } from "./dynamodb-codec.ts";
import { retryConflicts } from "./dynamodb-client.ts";
import { queryUpTo } from "./dynamodb-lists.ts";
import { BY_STATUS_INDEX, INDEX_SHARDS, TTL_ATTRIBUTE } from "./table-definition.ts";

/** One finished incarnation of a run whose retention has passed. */
export interface ExpiredRun extends PurgedRun {
  /** Its TTL, epoch seconds (`expiresAt` on the meta item). */
  expiresAt: number;
  /** Its last incarnation (continueAsNew): each one's journal is its own partition. */
  incarnation: number;
}

/**
 * Called for an expired run before its records are deleted, with its incarnation. The place
 * where state kept outside the table goes (a `PayloadStore`'s objects under the run's prefix).
 * Must be idempotent: a redelivered stream record, or a sweep after a crash, calls it again. An
 * error stops the purge of that run (its stream record is retried).
 */
export type ExpiredRunHook = (run: PurgedRun) => Promise<void>;

/** Deletes in flight at once while purging one run (on-demand tables take bursts well). */
const DELETE_CONCURRENCY = 25;
/** How long before a newer incarnation's creation a record must be to count as the old run's. */
const REUSE_MARGIN_MS = 60_000;

/**
 * Deletes every record (steps, signals, resolutions, …) of one expired incarnation; leaves the
 * meta item alone. Paged query of keys, conditional deletes (see the module comment).
 * Idempotent: a second call finds nothing of that run and deletes nothing.
 *
 * @example
 * ```ts
 * for (const run of await findExpiredRuns(client, "waymark-journal", Date.now(), 30 * 86_400_000, 100)) {
 *   const removed = await deleteRunRecords(client, "waymark-journal", run); // { deleted, kept }
 * }
 * ```
 */
export async function deleteRunRecords(client: DynamoDBClient, tableName: string, run: ExpiredRun): Promise<{ deleted: number; kept: number }> {
  const { GetItemCommand, QueryCommand } = await dynamodbSdk();
  const pk = pkOf(run.runId);
  const current = await retryConflicts(() => client.send(new GetItemCommand({
    TableName: tableName,
    Key: { pk: s(pk), sk: s(META_SK) },
    ProjectionExpression: "#c",
    ExpressionAttributeNames: { "#c": ATTR.createdAt },
    ConsistentRead: true,
  })));
  let cutoffMs = run.expiresAt * 1000;
  const newer = Number(current.Item?.[ATTR.createdAt]?.N ?? Number.NaN);
  if (Number.isFinite(newer) && newer !== run.createdAt) cutoffMs = Math.min(cutoffMs, newer - REUSE_MARGIN_MS);
  const cutoffUs = cutoffMs * 1000;

  let deleted = 0;
  let kept = 0;
  for (let k = 1; k <= run.incarnation; k++) {
    const partition = pkOf(journalIdOf(run.runId, k));
    let start: Item | undefined;
    do {
      const page = await retryConflicts(() => client.send(new QueryCommand({
        TableName: tableName,
        KeyConditionExpression: "pk = :pk",
        ExpressionAttributeValues: { ":pk": s(partition) },
        ProjectionExpression: "pk, sk, #w",
        ExpressionAttributeNames: { "#w": ATTR.writtenAt },
        ConsistentRead: true,
        ExclusiveStartKey: start,
      })));
      const keys = (page.Items ?? []).filter((item) => item.sk?.S !== META_SK);
      for (let i = 0; i < keys.length; i += DELETE_CONCURRENCY) {
        const outcomes = await Promise.all(keys.slice(i, i + DELETE_CONCURRENCY).map((item) => deleteIfOld(client, tableName, item, cutoffUs)));
        for (const gone of outcomes) gone ? deleted++ : kept++;
      }
      start = page.LastEvaluatedKey;
    } while (start !== undefined);
  }
  return { deleted, kept };
}

/** Deletes the meta item of an expired incarnation (not a newer one). True if it was there. */
export async function deleteExpiredMeta(client: DynamoDBClient, tableName: string, run: ExpiredRun, now: number): Promise<boolean> {
  const { DeleteItemCommand } = await dynamodbSdk();
  try {
    await retryConflicts(() => client.send(new DeleteItemCommand({
      TableName: tableName,
      Key: { pk: s(pkOf(run.runId)), sk: s(META_SK) },
      ConditionExpression: "#c = :c AND #ttl <= :nowS",
      ExpressionAttributeNames: { "#c": ATTR.createdAt, "#ttl": TTL_ATTRIBUTE },
      ExpressionAttributeValues: { ":c": n(run.createdAt), ":nowS": n(Math.floor(now / 1000)) },
    })));
    return true;
  } catch (err) {
    if (isErrorNamed(err, "ConditionalCheckFailedException")) return false;
    throw err;
  }
}

/**
 * Finished runs whose TTL has passed by `now`, oldest first, up to `limit`: a query of the
 * `byStatus` index per terminal status and shard. A run's `createdAt` is at most its finish,
 * and its TTL is its finish plus the retention, so only runs created `retentionMs` ago or
 * earlier are read (the key condition), and a filter keeps the expired ones.
 *
 * @example
 * ```ts
 * const expired = await findExpiredRuns(client, "waymark-journal", Date.now(), 30 * 86_400_000, 100);
 * ```
 */
export async function findExpiredRuns(client: DynamoDBClient, tableName: string, now: number, retentionMs: number, limit: number): Promise<ExpiredRun[]> {
  const max = Math.floor(limit);
  const createdBy = Math.floor(now - retentionMs);
  if (max <= 0 || createdBy < 0) return [];
  const partitions = ([...TERMINAL_STATUSES] as RunStatus[]).flatMap((status) => Array.from({ length: INDEX_SHARDS }, (_, shard) => statusPartition(status, shard)));
  const pages = await Promise.all(
    partitions.map((partition) =>
      queryUpTo(client, {
        TableName: tableName,
        IndexName: BY_STATUS_INDEX,
        KeyConditionExpression: "gsi1pk = :p AND gsi1sk < :bound",
        FilterExpression: "#ttl <= :nowS",
        ExpressionAttributeNames: { "#ttl": TTL_ATTRIBUTE },
        ExpressionAttributeValues: { ":p": s(partition), ":bound": s(pad(createdBy + 1)), ":nowS": n(Math.floor(now / 1000)) },
        ScanIndexForward: true,
      }, max),
    ),
  );
  return pages
    .flat()
    .map(expiredRunOf)
    .filter((run): run is ExpiredRun => run !== undefined)
    .sort((a, b) => a.createdAt - b.createdAt)
    .slice(0, max);
}

/** The incarnation a meta item (or a stream record's old image of one) describes, if finished. */
export function expiredRunOf(item: Item): ExpiredRun | undefined {
  const runId = item[ATTR.runId]?.S;
  const createdAt = Number(item[ATTR.createdAt]?.N ?? Number.NaN);
  const expiresAt = Number(item[TTL_ATTRIBUTE]?.N ?? Number.NaN);
  if (runId === undefined || !Number.isFinite(createdAt) || !Number.isFinite(expiresAt)) return undefined;
  const incarnation = Number(item[ATTR.incarnation]?.N ?? 1);
  return { runId, createdAt, expiresAt, incarnation: Number.isSafeInteger(incarnation) && incarnation > 1 ? incarnation : 1 };
}

async function deleteIfOld(client: DynamoDBClient, tableName: string, item: Item, cutoffUs: number): Promise<boolean> {
  const { DeleteItemCommand } = await dynamodbSdk();
  const pk = item.pk;
  const sk = item.sk;
  if (!pk || !sk) return false;
  try {
    await retryConflicts(() => client.send(new DeleteItemCommand({
      TableName: tableName,
      Key: { pk, sk },
      ConditionExpression: "attribute_not_exists(#w) OR #w < :cutoff",
      ExpressionAttributeNames: { "#w": ATTR.writtenAt },
      ExpressionAttributeValues: { ":cutoff": n(cutoffUs) },
    })));
    return true;
  } catch (err) {
    if (isErrorNamed(err, "ConditionalCheckFailedException")) return false; // a newer run's record
    throw err;
  }
}

/** A new run created at `createdAt` (epoch ms): records written before this (epoch s) are an earlier life's. */
export function leftoverCutoffS(createdAt: number): number {
  return Math.floor((createdAt - REUSE_MARGIN_MS) / 1000);
}

/**
 * Deletes the records a run id's previous life left behind, before a new run of the id is
 * created (`dynamodb-create.ts` found them, or found the previous life's expired meta item,
 * which the new one overwrites), through `deleteRunRecords`: the expired meta item, when there
 * is one, says which incarnations to sweep. Each delete is conditional on the record having been
 * written a minute or more before the new run, so a concurrent creator's fresh records (and a
 * child's own parent record, written just before its run) are never hit.
 */
export async function sweepLeftovers(client: DynamoDBClient, tableName: string, runId: string, createdAt: number, expired: Item | undefined): Promise<void> {
  const old = expired && expiredRunOf(expired);
  // Everything written up to a minute before this run started is the previous life's.
  await deleteRunRecords(client, tableName, { runId, createdAt: old?.createdAt ?? 0, expiresAt: leftoverCutoffS(createdAt), incarnation: old?.incarnation ?? 1 });
}
