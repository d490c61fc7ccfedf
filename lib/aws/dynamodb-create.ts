/**
 * Creating a run on DynamoDB: one query of the run id's partition, then one conditional put.
 *
 *   Query    pk = run#<runId>, consistent, filtered to the meta item and to records written a
 *            minute or more before the new run (what an earlier life of the id would have left)
 *   PutItem  the meta item, if absent (or its TTL passed); ALL_OLD on refusal
 *
 * The query answers both questions a start asks, in one request:
 *
 * - **Is there a run?** The meta item, when present, is in the answer: a live one is the start's
 *   answer (`created: false`, nothing written: a repeated start costs this one request), an
 *   expired one (TTL passed, not yet deleted: AWS takes up to days) names the life to sweep.
 * - **Did an earlier life leave records?** TTL deletes a finished run's meta item and the table's
 *   stream deletes the rest (`retention-stream.ts`); a start of the same id in between finds no
 *   meta item but the old records. Only records old enough to be an earlier life's count: a
 *   child's own `parent` record, written by its parent just before the child's run, does not.
 *
 * The sweep (conditional deletes, `dynamodb-retention.ts`) runs before the put, as it always did:
 * the new run is never visible beside an earlier life's records, so nothing (a signal, a cancel,
 * a read) can meet them. Done after the put instead — in the first invocation's load, say — it
 * would save the query, but the records written between the put and that load (a signal sent
 * at once) could then be told from an earlier life's only by their writers' clocks.
 *
 * The query reads at most `PAGE` items a page, with the record bodies projected away, and stops
 * at the meta item: usually the first page (only `attempt#`, `cancel` and `delivery#` keys sort
 * before `meta`).
 */
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { NewRun, RunMeta } from "../ports.ts";
import { freshRunMeta } from "../core/journal-base.ts";
import { ATTR, META_SK, decodeMeta, itemSize, n, newMetaItem, pkOf, s, type Item } from "./dynamodb-codec.ts";
import { retryConflicts } from "./dynamodb-client.ts";
import { leftoverCutoffS, sweepLeftovers } from "./dynamodb-retention.ts";
import { conditionFailed, DYNAMODB_ITEM_LIMIT_BYTES, RecordTooLargeError, sizeRefusal } from "./errors.ts";
import { dynamodbSdk } from "./sdk.ts";
import { TTL_ATTRIBUTE } from "./table-definition.ts";

/** Items evaluated per page of the probe (a fresh id's partition is empty, a child's holds one record). */
const PAGE = 100;

/** Every attribute a meta item can hold, so that the probe returns it whole and a record without its body. */
const META_ATTRIBUTES = [...Object.values(ATTR).filter((a) => a !== ATTR.body && a !== ATTR.lateFor), TTL_ATTRIBUTE];

/** What the probe of a run id's partition found. */
interface Probe {
  /** The meta item, if any. */
  meta?: Item;
  /** Records written before the cutoff (an earlier life's, unless a live meta item owns them). */
  old: boolean;
  /** Records written since the cutoff (a child's `parent` record), filtered out of the answer but counted. */
  recent: boolean;
}

/** `createRun` on DynamoDB (see the module comment). */
export async function createRun(client: DynamoDBClient, table: string, run: NewRun): Promise<{ created: boolean; run: RunMeta }> {
  const { PutItemCommand } = await dynamodbSdk();
  const nowS = Math.floor(run.createdAt / 1000);
  const found = await probe(client, table, run.runId, leftoverCutoffS(run.createdAt) * 1_000_000);
  if (found.meta && !isExpired(found.meta, nowS)) return { created: false, run: decodeMeta(found.meta) };
  if (found.meta || found.old) await sweepLeftovers(client, table, run.runId, run.createdAt, found.meta);

  const meta = freshRunMeta(run);
  const item = newMetaItem(meta);
  // The whole partition was read and held nothing: the run's first grant may say so, and its
  // first invocation reads no journal — unless a writer outside a lease marks it first
  // (`markJournaled`). A child's run never is: its `parent` record comes first.
  if (!found.meta && !found.old && !found.recent) item[ATTR.emptyJournal] = { BOOL: true };
  const size = itemSize(item);
  if (size > DYNAMODB_ITEM_LIMIT_BYTES) throw new RecordTooLargeError(run.runId, META_SK, size);
  try {
    await retryConflicts(() => client.send(new PutItemCommand({
      TableName: table,
      Item: item,
      ConditionExpression: "attribute_not_exists(pk) OR #ttl <= :nowS",
      ExpressionAttributeNames: { "#ttl": TTL_ATTRIBUTE },
      ExpressionAttributeValues: { ":nowS": n(nowS) },
      ReturnValuesOnConditionCheckFailure: "ALL_OLD",
    })));
  } catch (err) {
    // A concurrent start of the same run id won.
    if (conditionFailed(err) && err.Item) return { created: false, run: decodeMeta(err.Item) };
    throw sizeRefusal(err, run.runId, META_SK, size);
  }
  return { created: true, run: decodeMeta(item) };
}

/** The partition's meta item and whether it holds records written before `cutoffUs`, page by page until the meta item. */
async function probe(client: DynamoDBClient, table: string, runId: string, cutoffUs: number): Promise<Probe> {
  const { QueryCommand } = await dynamodbSdk();
  const names = Object.fromEntries(META_ATTRIBUTES.map((a, i) => [`#a${i}`, a]));
  const w = `#a${META_ATTRIBUTES.indexOf(ATTR.writtenAt)}`;
  const st = `#a${META_ATTRIBUTES.indexOf(ATTR.status)}`;
  const found: Probe = { old: false, recent: false };
  let start: Item | undefined;
  do {
    const page = await retryConflicts(() => client.send(new QueryCommand({
      TableName: table,
      KeyConditionExpression: "pk = :pk",
      // The meta item (only it has a status), and records old enough to be an earlier life's.
      FilterExpression: `attribute_exists(${st}) OR attribute_not_exists(${w}) OR ${w} < :cutoff`,
      ProjectionExpression: ["pk", "sk", ...Object.keys(names)].join(", "),
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: { ":pk": s(pkOf(runId)), ":cutoff": n(cutoffUs) },
      ConsistentRead: true,
      Limit: PAGE,
      ExclusiveStartKey: start,
    })));
    for (const item of page.Items ?? []) {
      if (item.sk?.S === META_SK) found.meta = item;
      else found.old = true;
    }
    if ((page.ScannedCount ?? 0) > (page.Count ?? 0)) found.recent = true;
    if (found.meta) return found;
    start = page.LastEvaluatedKey;
    // Past the meta item's key without it: there is none, and the old records are enough to know.
    if (found.old && start?.sk?.S !== undefined && start.sk.S > META_SK) return found;
  } while (start !== undefined);
  return found;
}

function isExpired(item: Item, nowS: number): boolean {
  const ttl = item[TTL_ATTRIBUTE]?.N;
  return ttl !== undefined && Number(ttl) <= nowS;
}
