/**
 * Reading a run's journal from the table: one consistent, paged query of the run's partition
 * gives the meta item and the first incarnation's records. A later incarnation's records live
 * under `run#<runId>~<k>`: once the meta item says so, the rest of the first partition is not read.
 */
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { journalIdOf } from "../core/run/journal-ids.ts";
import type { Journal, RunMeta, StoredRecord } from "../ports.ts";
import { ATTR, META_SK, decodeMeta, decodeRecord, pkOf, s, type Item } from "./dynamodb-codec.ts";
import { retryConflicts } from "./dynamodb-client.ts";
import { dynamodbSdk } from "./sdk.ts";

/**
 * The first incarnation's records share the meta item's partition (one query reads both). A
 * later incarnation's live under `run#<runId>~<k>`: once the meta item says so, the rest of
 * the first partition is not read (its pages are dropped, not kept in memory).
 */
export async function loadJournal(client: DynamoDBClient, table: string, runId: string, asked: number | undefined): Promise<Journal | undefined> {
  let run: RunMeta | undefined;
  let records: Array<{ record: StoredRecord; writtenAt: number }> = [];
  const wanted = (meta: RunMeta) => asked ?? meta.incarnation ?? 1;
  await queryPartition(client, table, runId, (item) => {
    if (item.sk?.S === META_SK) {
      run = decodeMeta(item);
      if (wanted(run) !== 1) return false; // stop: the records are elsewhere
    } else records.push({ record: decodeRecord(item), writtenAt: Number(item[ATTR.writtenAt]?.N ?? 0) });
    return true;
  });
  if (!run) return undefined;
  const incarnation = wanted(run);
  if (incarnation !== 1) {
    records = [];
    await queryPartition(client, table, journalIdOf(runId, incarnation), (item) => {
      records.push({ record: decodeRecord(item), writtenAt: Number(item[ATTR.writtenAt]?.N ?? 0) });
      return true;
    });
  }
  // The table orders by key; the journal is read in write order (the timeline).
  records.sort((a, b) => a.writtenAt - b.writtenAt);
  return { run, records: records.map((r) => r.record) };
}

/** Every item of one partition, page by page, until `take` answers false. */
async function queryPartition(client: DynamoDBClient, table: string, id: string, take: (item: Item) => boolean): Promise<void> {
  const { QueryCommand } = await dynamodbSdk();
  let start: Item | undefined;
  do {
    const out = await retryConflicts(() => client.send(new QueryCommand({
      TableName: table,
      KeyConditionExpression: "pk = :pk",
      ExpressionAttributeValues: { ":pk": s(pkOf(id)) },
      ConsistentRead: true,
      ExclusiveStartKey: start,
    })));
    for (const item of out.Items ?? []) if (!take(item)) return;
    start = out.LastEvaluatedKey;
  } while (start !== undefined);
}
