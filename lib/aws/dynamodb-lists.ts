/**
 * `listRuns` and `listDueRuns` over the two sharded indexes (see `table-definition.ts`): query
 * every shard of the wanted partitions for one page's worth, merge, cut the page.
 *
 * Index sort keys are unique (`<time>#<runId>`), so a page ends at one key and the next page
 * starts strictly after it: the cursor is that key, and every shard resumes from it with a key
 * condition (`gsi1sk < :after`) rather than a per-shard `LastEvaluatedKey`. A cursor therefore
 * stays small and valid whatever the shards hold. Like every GSI read, a list is eventually
 * consistent: a run that changed status a moment ago may still be listed under the old one.
 */
import type { DynamoDBClient, QueryCommandInput } from "@aws-sdk/client-dynamodb";
import { RUN_STATUSES, TERMINAL_STATUSES, type ListQuery, type RunMeta, type RunPage } from "../ports.ts";
import { decodeMeta, pad, s, statusPartition, wakePartition, type Item } from "./dynamodb-codec.ts";
import { retryConflicts } from "./dynamodb-client.ts";
import { InvalidCursorError } from "../core/errors.ts";
import { cursorPayload } from "../run-cursor.ts";
import { dynamodbSdk } from "./sdk.ts";
import { BY_STATUS_INDEX, BY_WAKE_INDEX, INDEX_SHARDS } from "./table-definition.ts";

const SHARDS = Array.from({ length: INDEX_SHARDS }, (_, i) => i);
const DEFAULT_PAGE = 100;
const CURSOR_VERSION = "r1";

/** Runs newest first (createdAt, then runId, descending), optionally of one status. */
export async function listRuns(client: DynamoDBClient, tableName: string, query: ListQuery): Promise<RunPage> {
  const limit = Math.max(1, Math.floor(query.limit ?? DEFAULT_PAGE));
  const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor);
  const statuses = query.status === undefined ? RUN_STATUSES : [query.status];
  const partitions = statuses.flatMap((status) => SHARDS.map((shard) => statusPartition(status, shard)));
  const pages = await Promise.all(
    partitions.map((partition) =>
      queryUpTo(client, {
        TableName: tableName,
        IndexName: BY_STATUS_INDEX,
        KeyConditionExpression: after === undefined ? "gsi1pk = :p" : "gsi1pk = :p AND gsi1sk < :after",
        ExpressionAttributeValues: { ":p": s(partition), ...(after === undefined ? {} : { ":after": s(after) }) },
        ScanIndexForward: false,
      }, limit + 1),
    ),
  );
  const merged = pages.flat().sort((a, b) => compareKeys(b, a, "gsi1sk"));
  const page = merged.slice(0, limit);
  const last = page[page.length - 1];
  const runs = page.map(decodeMeta);
  return merged.length > limit && last ? { runs, cursor: encodeCursor(keyOf(last, "gsi1sk")) } : { runs };
}

/** Unfinished runs whose `wakeAt` is at or before `now`, oldest wake first (then runId). */
export async function listDueRuns(client: DynamoDBClient, tableName: string, now: number, limit: number): Promise<RunMeta[]> {
  const max = Math.floor(limit);
  if (max <= 0) return [];
  // Every key of a wake at or before `now` sorts below the padded `now + 1`.
  const bound = pad(Math.max(0, Math.floor(now) + 1));
  const pages = await Promise.all(
    SHARDS.map((shard) =>
      queryUpTo(client, {
        TableName: tableName,
        IndexName: BY_WAKE_INDEX,
        KeyConditionExpression: "gsi2pk = :p AND gsi2sk < :bound",
        ExpressionAttributeValues: { ":p": s(wakePartition(shard)), ":bound": s(bound) },
        ScanIndexForward: true,
      }, max),
    ),
  );
  return pages
    .flat()
    .sort((a, b) => compareKeys(a, b, "gsi2sk"))
    .map(decodeMeta)
    .filter((run) => !TERMINAL_STATUSES.has(run.status)) // the index may lag a finish by a moment
    .slice(0, max);
}

/** Up to `max` items of one query, following `LastEvaluatedKey` (a page stops at 1 MB). */
export async function queryUpTo(client: DynamoDBClient, input: QueryCommandInput, max: number): Promise<Item[]> {
  const { QueryCommand } = await dynamodbSdk();
  const items: Item[] = [];
  let start: Item | undefined;
  do {
    const out = await retryConflicts(() => client.send(new QueryCommand({ ...input, Limit: max - items.length, ExclusiveStartKey: start })));
    items.push(...(out.Items ?? []));
    start = out.LastEvaluatedKey;
  } while (start !== undefined && items.length < max);
  return items;
}

/** DynamoDB orders string keys by UTF-8 bytes; so must the merge. */
function compareKeys(a: Item, b: Item, attr: string): number {
  return Buffer.compare(Buffer.from(keyOf(a, attr), "utf8"), Buffer.from(keyOf(b, attr), "utf8"));
}

function keyOf(item: Item, attr: string): string {
  return item[attr]?.S ?? "";
}

function encodeCursor(after: string): string {
  return Buffer.from(JSON.stringify([CURSOR_VERSION, after])).toString("base64url");
}

function decodeCursor(cursor: string): string {
  const parsed = cursorPayload(cursor);
  if (!Array.isArray(parsed) || parsed[0] !== CURSOR_VERSION || typeof parsed[1] !== "string") throw new InvalidCursorError(cursor);
  return parsed[1];
}
