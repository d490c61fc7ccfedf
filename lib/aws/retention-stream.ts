/**
 * Retention on AWS: the journal table's stream, filtered to TTL deletions of meta items.
 *
 * When a finished run's retention passes, DynamoDB TTL deletes its meta item (no write units
 * consumed). The deletion appears on the table's stream as a `REMOVE` whose `userIdentity` is
 * the DynamoDB service (`{ type: "Service", principalId: "dynamodb.amazonaws.com" }`), with
 * the item's old image (the stream's view type is `OLD_IMAGE`). This handler deletes the rest of
 * the run: the `onRunExpired` hook (payload objects, later), then every record of that
 * incarnation (`DynamoJournalStore.purgeRun`). Everything else on the stream is ignored: the
 * construct's event source mapping filters it out before Lambda is invoked (filtered records
 * are not billed), and this check repeats the filter so the handler is safe on its own.
 *
 * Redelivery is harmless: a second purge of the same run finds nothing and deletes nothing.
 */
import { ConfigurationError } from "./config.ts";
import { META_SK } from "./dynamodb-codec.ts";
import { expiredRunOf, type ExpiredRun } from "./dynamodb-retention.ts";
import type { DynamoJournalStore } from "./dynamodb-store.ts";
import type { DynamoStreamEvent, DynamoStreamRecord, StreamBatchResponse } from "./lambda-types.ts";
import type { AwsRuntime } from "./runtime.ts";

/** The principal of TTL deletions on a DynamoDB stream. */
export const TTL_PRINCIPAL = "dynamodb.amazonaws.com";

/** What the handler needs: the store (its table and hook) and a log. `AwsRuntime` has both. */
export type RetentionTarget = { store: Pick<DynamoJournalStore, "purgeRun"> } & Pick<AwsRuntime, "log">;

/** True for a `REMOVE` made by DynamoDB TTL (not by a user or the application). */
export function isTtlRemove(record: DynamoStreamRecord): boolean {
  return record.eventName === "REMOVE" && record.userIdentity?.type === "Service" && record.userIdentity.principalId === TTL_PRINCIPAL;
}

/**
 * Handles a batch of stream records: each TTL deletion of a run's meta item purges that run's
 * remaining items. Records are taken in order; at the first failure the rest are left and its
 * sequence number reported, so Lambda retries from there (the mapping bisects, retries a bounded
 * number of times, then sends the batch's position to the failure queue).
 *
 * @example
 * ```ts
 * // inside a Lambda handler that received the journal table's stream
 * export const handler = (event: DynamoStreamEvent) => handleRetentionStream(runtime, event);
 * ```
 */
export async function handleRetentionStream(target: RetentionTarget, event: DynamoStreamEvent): Promise<StreamBatchResponse> {
  for (const record of event.Records) {
    const run = isTtlRemove(record) ? expiredMetaOf(record) : undefined;
    if (!run) continue;
    try {
      const { deleted, kept } = await target.store.purgeRun(run);
      target.log({ level: "info", event: "retention", runId: run.runId, createdAt: run.createdAt, deleted, kept });
    } catch (err) {
      target.log({ level: "error", event: "retention", runId: run.runId, outcome: "error", error: err instanceof Error ? { name: err.name, message: err.message } : String(err) });
      const sequence = record.dynamodb?.SequenceNumber;
      if (sequence === undefined) throw err; // nothing to point Lambda at: fail the whole batch
      return { batchItemFailures: [{ itemIdentifier: sequence }] };
    }
  }
  return { batchItemFailures: [] };
}

/** The run whose meta item this TTL `REMOVE` deleted, or undefined for any other item. */
function expiredMetaOf(record: DynamoStreamRecord): ExpiredRun | undefined {
  if (record.dynamodb?.Keys?.sk?.S !== META_SK) return undefined;
  const image = record.dynamodb.OldImage;
  const run = image && expiredRunOf(image);
  if (!run) {
    // A TTL deletion of a meta item always carries runId, createdAt and expiresAt in its image.
    throw new ConfigurationError(`stream record ${record.eventID ?? "?"} has no old image of the run: set the journal table's stream view type to OLD_IMAGE`);
  }
  return run;
}
