/**
 * Clients for the local AWS peers that the global setup (`global.ts`) started for this run.
 */
import { DynamoDBClient, type DynamoDBClientConfig } from "@aws-sdk/client-dynamodb";
import { SQSClient } from "@aws-sdk/client-sqs";
import type { S3Client } from "@aws-sdk/client-s3";
import { s3PeerClient } from "./s3-peer.ts";
import { inject } from "vitest";
import { LOCAL_CREDENTIALS, LOCAL_REGION } from "./local-aws.ts";

declare module "vitest" {
  export interface ProvidedContext {
    /** DynamoDB Local, e.g. `http://127.0.0.1:41234`. */
    dynamodbEndpoint: string;
    /** The in-process SQS emulator (`local-aws-sqs`). */
    sqsEndpoint: string;
    /** s3rver, the local S3 peer (`s3-peer.ts`), with the bucket `PAYLOAD_BUCKET`. */
    s3Endpoint: string;
  }
}

/** A client for this run's DynamoDB Local. */
export function localDynamoClient(config: DynamoDBClientConfig = {}): DynamoDBClient {
  return new DynamoDBClient({ endpoint: inject("dynamodbEndpoint"), region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS, ...config });
}

/** A client for this run's SQS emulator. */
export function localSqsClient(): SQSClient {
  return new SQSClient({ endpoint: inject("sqsEndpoint"), region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
}

/** A client for this run's S3 peer. */
export function localS3Client(): S3Client {
  return s3PeerClient(inject("s3Endpoint"));
}

/** A name no other test file uses, for tables and queues. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${process.pid}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
}
