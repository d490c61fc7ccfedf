/**
 * The journal table, built from the runtime's own definition (`JOURNAL_TABLE` in `waymark/aws`),
 * so the keys, indexes and TTL attribute the store writes are the ones deployed.
 */
import { RemovalPolicy } from "aws-cdk-lib";
import * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import type { Construct } from "constructs";
import { JOURNAL_TABLE, type KeyAttribute } from "waymark/aws";

const PROJECTION = { ALL: dynamodb.ProjectionType.ALL } as const;
const attribute = (key: KeyAttribute): dynamodb.Attribute => ({ name: key.name, type: dynamodb.AttributeType.STRING });

/**
 * Creates the journal table: on-demand, TTL on finished runs, a stream with the old image (TTL
 * deletions of meta items drive retention of the rest, see `retention.ts`), point-in-time
 * recovery, and deletion protection unless the data is meant to go with the stack.
 *
 * @example
 * ```ts
 * const table = journalTable(this, "Journal", RemovalPolicy.RETAIN);
 * table.tableName; // WAYMARK_TABLE
 * ```
 */
export function journalTable(scope: Construct, id: string, removalPolicy: RemovalPolicy): dynamodb.TableV2 {
  const t = JOURNAL_TABLE;
  return new dynamodb.TableV2(scope, id, {
    partitionKey: attribute(t.partitionKey),
    sortKey: attribute(t.sortKey),
    globalSecondaryIndexes: t.indexes.map((index) => ({
      indexName: index.indexName,
      partitionKey: attribute(index.partitionKey),
      sortKey: attribute(index.sortKey),
      projectionType: PROJECTION[index.projection],
    })),
    billing: dynamodb.Billing.onDemand(),
    timeToLiveAttribute: t.ttlAttribute,
    dynamoStream: dynamodb.StreamViewType.OLD_IMAGE,
    pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: t.pointInTimeRecovery },
    // The journal is the source of truth of every run: a stack deletion must not take it along.
    deletionProtection: removalPolicy !== RemovalPolicy.DESTROY,
    removalPolicy,
  });
}
