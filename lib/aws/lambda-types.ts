/**
 * The shapes of the Lambda events and context Waymark handles: the SQS batch, the Function URL
 * request (payload format 2.0), the journal table's stream (retention), and direct invocations.
 * Only the fields Waymark reads.
 */
import type { AttributeValue } from "@aws-sdk/client-dynamodb";

/** The part of the Lambda context Waymark uses. */
export interface LambdaContext {
  getRemainingTimeInMillis(): number;
  awsRequestId?: string;
  functionName?: string;
  memoryLimitInMB?: string;
  invokedFunctionArn?: string;
}

/** One record of an SQS batch, the fields Waymark reads. */
export interface SqsRecord {
  messageId: string;
  body: string;
  eventSource: "aws:sqs";
  attributes?: { ApproximateReceiveCount?: string };
}

/** An SQS batch as Lambda delivers it. */
export interface SqsEvent {
  Records: SqsRecord[];
}

/** The answer to an SQS batch: the records that failed (partial batch failures). */
export interface SqsBatchResponse {
  batchItemFailures: Array<{ itemIdentifier: string }>;
}

/** A Lambda Function URL request, payload format 2.0. */
export interface FunctionUrlEvent {
  version: "2.0";
  rawPath: string;
  rawQueryString?: string;
  headers?: Record<string, string | undefined>;
  queryStringParameters?: Record<string, string | undefined>;
  body?: string;
  isBase64Encoded?: boolean;
  requestContext: { http: { method: string; path?: string } };
}

/** A Function URL response. */
export interface FunctionUrlResponse {
  statusCode: number;
  headers: Record<string, string>;
  body: string;
}

/** A direct invocation that starts a run (e.g. `aws lambda invoke` or another service). */
export interface StartEvent {
  waymark: "start";
  runId: string;
  input: unknown;
  /** Defaults to the function's only workflow. */
  workflow?: string;
}

/** The watchdog's scheduled invocation. */
export interface WatchdogEvent {
  waymark: "watchdog";
}

/**
 * A DynamoDB stream record as Lambda delivers it. A TTL deletion is a `REMOVE` whose
 * `userIdentity` is `{ type: "Service", principalId: "dynamodb.amazonaws.com" }`; any other
 * delete has no `userIdentity`.
 */
export interface DynamoStreamRecord {
  eventID?: string;
  eventName?: "INSERT" | "MODIFY" | "REMOVE";
  eventSource: "aws:dynamodb";
  eventSourceARN?: string;
  userIdentity?: { type?: string; principalId?: string };
  dynamodb?: {
    Keys?: Record<string, AttributeValue>;
    OldImage?: Record<string, AttributeValue>;
    SequenceNumber?: string;
    ApproximateCreationDateTime?: number;
  };
}

/** A batch of DynamoDB stream records as Lambda delivers it. */
export interface DynamoStreamEvent {
  Records: DynamoStreamRecord[];
}

/** Partial batch response of a stream: Lambda resumes from the lowest sequence number listed. */
export interface StreamBatchResponse {
  batchItemFailures: Array<{ itemIdentifier: string }>;
}

/** True for a batch of DynamoDB stream records (the retention stream). */
export function isDynamoStreamEvent(event: unknown): event is DynamoStreamEvent {
  const records = (event as { Records?: unknown })?.Records;
  return Array.isArray(records) && records.length > 0 && records.every((r) => (r as { eventSource?: unknown })?.eventSource === "aws:dynamodb");
}

/** True for a batch of SQS records (wakes). */
export function isSqsEvent(event: unknown): event is SqsEvent {
  const records = (event as { Records?: unknown })?.Records;
  return Array.isArray(records) && records.every((r) => (r as { eventSource?: unknown })?.eventSource === "aws:sqs");
}

/** True for a Function URL request (payload format 2.0). */
export function isFunctionUrlEvent(event: unknown): event is FunctionUrlEvent {
  const e = event as { version?: unknown; requestContext?: { http?: unknown } };
  return e?.version === "2.0" && typeof e.requestContext?.http === "object";
}

/** The `waymark` field of a direct invocation (`start`, `watchdog`, `child-start`, …), if any. */
export function waymarkAction(event: unknown): string | undefined {
  const action = (event as { waymark?: unknown })?.waymark;
  return typeof action === "string" ? action : undefined;
}
