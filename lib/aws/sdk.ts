/**
 * The AWS SDK v3 clients, each imported the first time it is used, never when a bundle loads.
 *
 * A bundler hoists every static import of an external module (the Lambda construct keeps
 * `@aws-sdk/*` external: the runtime provides it) to the top of the bundle, so one static
 * `import { X } from "@aws-sdk/…"` anywhere in the adapters would load that client in the
 * Lambda's init, used or not. A dynamic `import()` stays where it is written. So: DynamoDB and
 * SQS load on the first invocation, the Scheduler only for the first wake past SQS's 15-minute
 * delay, SSM or Secrets Manager only when the webhook secret is read (on a cold start, and only
 * where one is configured), S3 only when a value is first
 * stored or read by reference. Types are imported statically
 * (`import type` costs nothing at run time).
 */
type DynamoDbSdk = typeof import("@aws-sdk/client-dynamodb");
type SqsSdk = typeof import("@aws-sdk/client-sqs");
type SchedulerSdk = typeof import("@aws-sdk/client-scheduler");
type SecretsManagerSdk = typeof import("@aws-sdk/client-secrets-manager");
type SsmSdk = typeof import("@aws-sdk/client-ssm");
type S3Sdk = typeof import("@aws-sdk/client-s3");

let dynamodb: Promise<DynamoDbSdk> | undefined;
let sqs: Promise<SqsSdk> | undefined;
let scheduler: Promise<SchedulerSdk> | undefined;
let secretsManager: Promise<SecretsManagerSdk> | undefined;
let ssm: Promise<SsmSdk> | undefined;
let s3: Promise<S3Sdk> | undefined;

/** `@aws-sdk/client-dynamodb`, loaded once. */
export function dynamodbSdk(): Promise<DynamoDbSdk> {
  return (dynamodb ??= import("@aws-sdk/client-dynamodb"));
}

/** `@aws-sdk/client-sqs`, loaded once. */
export function sqsSdk(): Promise<SqsSdk> {
  return (sqs ??= import("@aws-sdk/client-sqs"));
}

/** `@aws-sdk/client-scheduler`, loaded once. */
export function schedulerSdk(): Promise<SchedulerSdk> {
  return (scheduler ??= import("@aws-sdk/client-scheduler"));
}

/** `@aws-sdk/client-secrets-manager`, loaded once. */
export function secretsManagerSdk(): Promise<SecretsManagerSdk> {
  return (secretsManager ??= import("@aws-sdk/client-secrets-manager"));
}

/** `@aws-sdk/client-ssm`, loaded once (only when the webhook secret is read from Parameter Store). */
export function ssmSdk(): Promise<SsmSdk> {
  return (ssm ??= import("@aws-sdk/client-ssm"));
}

/** `@aws-sdk/client-s3`, loaded once (only when a payload is first stored or read by reference). */
export function s3Sdk(): Promise<S3Sdk> {
  return (s3 ??= import("@aws-sdk/client-s3"));
}

type LambdaSdk = typeof import("@aws-sdk/client-lambda");
let lambda: Promise<LambdaSdk> | undefined;

/** `@aws-sdk/client-lambda`, loaded once (only when a parent first starts or cancels a child in another function). */
export function lambdaSdk(): Promise<LambdaSdk> {
  return (lambda ??= import("@aws-sdk/client-lambda"));
}
