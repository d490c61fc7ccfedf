/**
 * The journal table, defined once: the store writes to it, the tests create it from it, and the
 * CDK construct builds its `TableV2` from it.
 *
 * One table, one item collection per run:
 *
 * | pk            | sk                   | what                                               |
 * | ------------- | -------------------- | -------------------------------------------------- |
 * | `run#<runId>` | `meta`               | the run (status, lease, wake time, input, result)  |
 * | `run#<runId>` | `step#charge`, …     | a record; its JSON body in `body`, `lateFor` apart |
 *
 * Two global secondary indexes, both written only by the meta item:
 *
 * - `byStatus` (`gsi1pk = status#<status>#<shard>`, `gsi1sk = <createdAt, 15 digits>#<runId>`):
 *   `listRuns`, newest first (a backwards query). Every run is in it.
 * - `byWake` (`gsi2pk = wake#<shard>`, `gsi2sk = <wakeAt, 15 digits>#<runId>`): `listDueRuns`,
 *   oldest wake first. Sparse: only runs that are not finished and have a wake time carry
 *   `gsi2pk`, so the watchdog reads due runs and nothing else.
 *
 * Why `<shard>`: a status (and "has a wake time") has few values, so without a suffix all
 * running runs would share one index partition, and every lease renewal moves a run's `wakeAt`,
 * i.e. writes to the index. An index partition takes about 1,000 writes/s, and a throttled index
 * throttles the table. The suffix spreads each status over {@link INDEX_SHARDS} partitions; the
 * lists query every shard and merge (a few small queries per page; the lists are not hot).
 * Changing the shard count needs a backfill of the index keys, so it is fixed here.
 *
 * Both indexes project ALL attributes: a listed run is a whole `RunMeta` with no second read.
 */
import type { CreateTableCommandInput } from "@aws-sdk/client-dynamodb";

/** The attribute that DynamoDB TTL reads (epoch seconds), set on finished runs. */
export const TTL_ATTRIBUTE = "expiresAt";

/** Index partitions per status; see the module comment. Fixed for a table's lifetime. */
export const INDEX_SHARDS = 4;

/** The journal table's index of runs by status (sharded). */
export const BY_STATUS_INDEX = "byStatus";
/** The journal table's index of runs by due wake time (sharded), which the watchdog queries. */
export const BY_WAKE_INDEX = "byWake";

/** A key attribute: name and DynamoDB scalar type (all strings here). */
export interface KeyAttribute {
  name: string;
  type: "S";
}

/** A global secondary index of the journal table: its name and keys. */
export interface IndexDefinition {
  indexName: string;
  partitionKey: KeyAttribute;
  sortKey: KeyAttribute;
  projection: "ALL";
}

/** The table's shape as plain data, for the CDK construct (map `"S"` to `AttributeType.STRING`). */
export interface JournalTableDefinition {
  partitionKey: KeyAttribute;
  sortKey: KeyAttribute;
  indexes: readonly IndexDefinition[];
  ttlAttribute: string;
  /** Point-in-time recovery on: the journal is the source of truth (docs/architecture.md). */
  pointInTimeRecovery: true;
}

/**
 * The journal table's keys, indexes and TTL attribute.
 *
 * @example
 * ```ts
 * // in a CDK construct
 * new dynamodb.TableV2(this, "Journal", {
 *   partitionKey: { name: JOURNAL_TABLE.partitionKey.name, type: dynamodb.AttributeType.STRING },
 *   sortKey: { name: JOURNAL_TABLE.sortKey.name, type: dynamodb.AttributeType.STRING },
 *   timeToLiveAttribute: JOURNAL_TABLE.ttlAttribute,
 * });
 * ```
 */
export const JOURNAL_TABLE: JournalTableDefinition = {
  partitionKey: { name: "pk", type: "S" },
  sortKey: { name: "sk", type: "S" },
  indexes: [
    { indexName: BY_STATUS_INDEX, partitionKey: { name: "gsi1pk", type: "S" }, sortKey: { name: "gsi1sk", type: "S" }, projection: "ALL" },
    { indexName: BY_WAKE_INDEX, partitionKey: { name: "gsi2pk", type: "S" }, sortKey: { name: "gsi2sk", type: "S" }, projection: "ALL" },
  ],
  ttlAttribute: TTL_ATTRIBUTE,
  pointInTimeRecovery: true,
};

/**
 * `CreateTable` input for the journal table (on-demand billing), for tests and scripts. TTL is
 * enabled separately (`UpdateTimeToLive` on {@link TTL_ATTRIBUTE}); the CDK construct does both.
 *
 * @example
 * ```ts
 * await client.send(new CreateTableCommand(journalTableInput("waymark-journal")));
 * ```
 */
export function journalTableInput(tableName: string): CreateTableCommandInput {
  const t = JOURNAL_TABLE;
  const keyAttributes = [t.partitionKey, t.sortKey, ...t.indexes.flatMap((i) => [i.partitionKey, i.sortKey])];
  return {
    TableName: tableName,
    BillingMode: "PAY_PER_REQUEST",
    KeySchema: [
      { AttributeName: t.partitionKey.name, KeyType: "HASH" },
      { AttributeName: t.sortKey.name, KeyType: "RANGE" },
    ],
    AttributeDefinitions: keyAttributes.map((a) => ({ AttributeName: a.name, AttributeType: a.type })),
    GlobalSecondaryIndexes: t.indexes.map((i) => ({
      IndexName: i.indexName,
      KeySchema: [
        { AttributeName: i.partitionKey.name, KeyType: "HASH" },
        { AttributeName: i.sortKey.name, KeyType: "RANGE" },
      ],
      Projection: { ProjectionType: i.projection },
    })),
  };
}
