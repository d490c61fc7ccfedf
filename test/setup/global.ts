/**
 * Vitest global setup: starts the local AWS peers once per test run and hands their endpoints
 * to the tests (`inject("dynamodbEndpoint")`, `inject("sqsEndpoint")`, `inject("s3Endpoint")`). Nothing is skipped when a
 * peer is missing: a peer that cannot start fails the run, with the reason.
 */
import type { Server } from "node:http";
import { createSqsServer } from "local-aws-sqs";
import type { TestProject } from "vitest/node";
import { startDynamoDbLocal } from "./dynamodb-local.ts";
import { LOCAL_REGION } from "./local-aws.ts";
import { startS3Peer } from "./s3-peer.ts";

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // The SDK warns once per process that releases after January 2027 need Node 22 (known: the
  // Lambda targets nodejs22.x); test workers inherit this and stay quiet.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";
  const [dynamodb, sqs, s3] = await Promise.all([startDynamoDbLocal(), startSqs(), startS3Peer()]);
  project.provide("dynamodbEndpoint", dynamodb.endpoint);
  project.provide("sqsEndpoint", sqs.endpoint);
  project.provide("s3Endpoint", s3.endpoint);
  return async () => {
    await Promise.all([dynamodb.stop(), sqs.stop(), s3.stop()]);
  };
}

async function startSqs(): Promise<{ endpoint: string; stop: () => Promise<void> }> {
  const server: Server = await createSqsServer({ port: 0, hostname: "127.0.0.1", region: LOCAL_REGION, emulateQueueCreationLifecycle: false });
  const address = server.address();
  if (typeof address !== "object" || address === null) throw new Error("the SQS emulator did not report its port");
  return {
    endpoint: `http://127.0.0.1:${address.port}`,
    stop: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
