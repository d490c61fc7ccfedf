/**
 * `waymark/aws`: the production adapters — the DynamoDB journal store, wakes through SQS and
 * EventBridge Scheduler, the journal table's definition (shared with the CDK construct), and
 * the wake message format the Lambda entry reads.
 */
export { DynamoJournalStore, type DynamoJournalStoreOptions } from "./dynamodb-store.ts";
export { createJournalDynamoClient, JOURNAL_CLIENT_CONFIG, JOURNAL_MAX_ATTEMPTS } from "./dynamodb-client.ts";
export {
  JOURNAL_TABLE,
  journalTableInput,
  TTL_ATTRIBUTE,
  INDEX_SHARDS,
  BY_STATUS_INDEX,
  BY_WAKE_INDEX,
  type JournalTableDefinition,
  type IndexDefinition,
  type KeyAttribute,
} from "./table-definition.ts";
export { AwsWakeQueue, type AwsWakeQueueOptions } from "./wakes.ts";
export { SqsWakes, type SqsWakesOptions } from "./sqs-wakes.ts";
export { SchedulerWakes, scheduleName, atExpression, DEFAULT_SCHEDULE_RETRY, type SchedulerWakesOptions } from "./scheduler-wakes.ts";
export { formatWakeMessage, parseWakeMessage, topUpDelaySeconds, WAKE_MESSAGE_VERSION, SQS_MAX_DELAY_SECONDS } from "./wake-message.ts";
export { RecordTooLargeError, MalformedWakeError, ScheduleThrottledError, ChildInvokeError, ContendedWriteError, DYNAMODB_ITEM_LIMIT_BYTES } from "./errors.ts";
export { LambdaChildren, type LambdaChildrenOptions } from "./remote-children.ts";
export { startChildByInvoke, cancelChildByInvoke, CHILD_ENTRY_ALIAS, type ChildAnswer } from "./child-entry.ts";
export { formatChildEndMessage, parseChildEndMessage, isChildEndMessage, CHILD_END_MAX_BYTES } from "./child-message.ts";
export { createLambdaHandler, UnsupportedEventError, type LambdaHandler } from "./lambda.ts";
export { createAwsRuntime, jsonLog, type AwsRuntime, type AwsRuntimeOptions } from "./runtime.ts";
export {
  readWebhookSecret,
  readSsmSecret,
  readSecretsManager,
  webhookSecretSource,
  GENERATED_SECRET_BYTES,
  type WebhookSecretSource,
  type SecretReader,
} from "./webhook-secret.ts";
export { configFromEnv, ConfigurationError, ENV, failoverTimings, DEFAULT_DEADLINE_MARGIN_MS, type AwsRuntimeConfig, type FailoverTimings } from "./config.ts";
export { handleWakeBatch } from "./sqs-entry.ts";
export { METRIC, METRICS_NAMESPACE, DIMENSION } from "../observe/metrics.ts";
export { S3PayloadStore, type S3PayloadStoreOptions } from "./s3-payloads.ts";
export { sweepOverdueRuns, sweepsRun, type SweepResult } from "./watchdog.ts";
export { handleRetentionStream, isTtlRemove, TTL_PRINCIPAL, type RetentionTarget } from "./retention-stream.ts";
export { deleteRunRecords, findExpiredRuns, type ExpiredRun, type ExpiredRunHook } from "./dynamodb-retention.ts";
export { handleFunctionUrl, toHttpRequest } from "./function-url.ts";
export type * from "./lambda-types.ts";
