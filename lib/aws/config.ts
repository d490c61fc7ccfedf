/**
 * The Lambda's configuration, read from the environment the CDK construct sets. Read on the
 * first invocation, never at import: importing a workflow module constructs nothing AWS.
 */
import { WaymarkError } from "../core/errors.ts";

/** A required setting is missing or malformed. Deploy-time problem: retrying does not help. */
export class ConfigurationError extends WaymarkError {
  override readonly name = "ConfigurationError" as const;
  readonly retryable = false;
}

export interface AwsRuntimeConfig {
  tableName: string;
  queueUrl: string;
  queueArn: string;
  scheduleGroup: string;
  schedulerRoleArn: string;
  schedulerDeadLetterArn: string;
  /** Days a finished run's journal is kept. */
  retentionDays: number;
  /** Checkpoint (continue in a new invocation) when less than this much time remains. */
  checkpointMarginMs: number;
  leaseTtlMs: number;
  maxInvocations: number;
  /** The webhook secret itself (tests, or a user who injects it) … */
  webhookSecret?: string;
  /** … or the Secrets Manager secret holding it (what the construct sets). */
  webhookSecretArn?: string;
  /** Public base URL of the webhook (the Function URL or a custom domain), for approval links. */
  publicUrl?: string;
  /** The S3 bucket for values stored by reference (what the construct creates); none: values over the limit are refused. */
  payloadBucket?: string;
  /** Values over this many JSON bytes go to the bucket. Default 64 KiB. */
  payloadInlineBytes?: number;
  /** Values over this many JSON bytes are refused, once. Default 16 MiB. */
  payloadMaxBytes?: number;
  /** Functions (names or ARNs) hosting children this one starts: `child.grantInvoke(parent)` lists them. */
  childFunctions?: readonly string[];
  /** Wake queues (URLs) of the parent functions that may start children here: `child.grantInvoke(parent)` lists them. */
  parentQueues?: readonly string[];
}

/** The environment variables, by setting. */
export const ENV = {
  tableName: "WAYMARK_TABLE",
  queueUrl: "WAYMARK_QUEUE_URL",
  queueArn: "WAYMARK_QUEUE_ARN",
  scheduleGroup: "WAYMARK_SCHEDULE_GROUP",
  schedulerRoleArn: "WAYMARK_SCHEDULER_ROLE_ARN",
  schedulerDeadLetterArn: "WAYMARK_SCHEDULER_DLQ_ARN",
  retentionDays: "WAYMARK_RETENTION_DAYS",
  checkpointMarginMs: "WAYMARK_CHECKPOINT_MARGIN_MS",
  leaseTtlMs: "WAYMARK_LEASE_TTL_MS",
  maxInvocations: "WAYMARK_MAX_INVOCATIONS",
  webhookSecret: "WAYMARK_WEBHOOK_SECRET",
  webhookSecretArn: "WAYMARK_WEBHOOK_SECRET_ARN",
  publicUrl: "WAYMARK_PUBLIC_URL",
  payloadBucket: "WAYMARK_PAYLOAD_BUCKET",
  payloadInlineBytes: "WAYMARK_PAYLOAD_INLINE_BYTES",
  payloadMaxBytes: "WAYMARK_PAYLOAD_MAX_BYTES",
  childFunctions: "WAYMARK_CHILD_FUNCTIONS",
  parentQueues: "WAYMARK_PARENT_QUEUES",
} as const;

/** Reads the configuration; throws one {@link ConfigurationError} listing every problem. */
export function configFromEnv(env: Readonly<Record<string, string | undefined>> = process.env): AwsRuntimeConfig {
  const problems: string[] = [];
  const text = (key: keyof typeof ENV, required = true): string => {
    const value = env[ENV[key]];
    if (required && !value) problems.push(`${ENV[key]} is not set`);
    return value ?? "";
  };
  const num = (key: keyof typeof ENV, fallback: number): number => {
    const raw = env[ENV[key]];
    if (raw === undefined || raw === "") return fallback;
    const value = Number(raw);
    if (!Number.isFinite(value) || value <= 0) problems.push(`${ENV[key]} must be a positive number, got "${raw}"`);
    return value;
  };
  /** A comma-separated list (ARNs and queue URLs have no commas). */
  const list = (key: keyof typeof ENV): string[] => text(key, false).split(",").map((v) => v.trim()).filter((v) => v !== "");
  const config: AwsRuntimeConfig = {
    tableName: text("tableName"),
    queueUrl: text("queueUrl"),
    queueArn: text("queueArn"),
    scheduleGroup: text("scheduleGroup"),
    schedulerRoleArn: text("schedulerRoleArn"),
    schedulerDeadLetterArn: text("schedulerDeadLetterArn"),
    retentionDays: num("retentionDays", 30),
    checkpointMarginMs: num("checkpointMarginMs", 10_000),
    leaseTtlMs: num("leaseTtlMs", 60_000),
    maxInvocations: num("maxInvocations", 10_000),
  };
  const secret = text("webhookSecret", false);
  const secretArn = text("webhookSecretArn", false);
  const publicUrl = text("publicUrl", false);
  if (secret) config.webhookSecret = secret;
  if (secretArn) config.webhookSecretArn = secretArn;
  if (publicUrl) config.publicUrl = publicUrl.replace(/\/+$/, "");
  const payloadBucket = text("payloadBucket", false);
  if (payloadBucket) config.payloadBucket = payloadBucket;
  if (env[ENV.payloadInlineBytes]) config.payloadInlineBytes = num("payloadInlineBytes", 0);
  if (env[ENV.payloadMaxBytes]) config.payloadMaxBytes = num("payloadMaxBytes", 0);
  const childFunctions = list("childFunctions");
  if (childFunctions.length > 0) config.childFunctions = childFunctions;
  const parentQueues = list("parentQueues");
  if (parentQueues.length > 0) config.parentQueues = parentQueues;
  if (problems.length > 0) throw new ConfigurationError(`Waymark's Lambda configuration is incomplete: ${problems.join("; ")}`);
  return config;
}
