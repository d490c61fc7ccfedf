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

/**
 * The AWS runtime's configuration, as `configFromEnv` reads it from the environment the construct
 * sets (`ENV`).
 */
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
  /**
   * An invocation gives its runs up (`abandoned`, woken again when the lease lapses) this long
   * before the function's time runs out, leaving room for that last write and the batch's
   * answer; at most a tenth of the time the invocation had. Default 2 s.
   */
  deadlineMarginMs?: number;
  /** The lease TTL; the construct derives it from the function timeout ({@link failoverTimings}). */
  leaseTtlMs: number;
  maxInvocations: number;
  /** The webhook secret itself (tests, or a user who injects it) … */
  webhookSecret?: string;
  /** … or the SSM Parameter Store SecureString holding it (what the construct sets by default) … */
  webhookSecretParameter?: string;
  /**
   * … which the runtime creates, with a random value, if it does not exist yet (the construct's
   * own parameter: CloudFormation cannot create a SecureString) …
   */
  webhookSecretCreate?: boolean;
  /** … or the Secrets Manager secret holding it (one a user brings). */
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
  /**
   * The watchdog wakes only runs of workflows this function hosts (by name, any version): the
   * construct sets it when several functions share one journal table, each with its own wake
   * queue, so a sweep never sends another function's run to this one.
   */
  watchdogHostedOnly?: boolean;
  /**
   * With {@link watchdogHostedOnly}: runs of workflows this function does not host are woken too
   * once they are this overdue (the engine's first function), so a run no function hosts is still
   * reported (`unhosted`) rather than left overdue in silence.
   */
  watchdogOrphansAfterMs?: number;
}

/** {@link AwsRuntimeConfig.deadlineMarginMs}'s default. */
export const DEFAULT_DEADLINE_MARGIN_MS = 2_000;

/** Time for a cold start and the event source's hand-over, between a wake's receipt and its invocation's start. */
export const START_SLACK_SECONDS = 15;

/** The settings that bound failover on Lambda, derived from one function timeout. */
export interface FailoverTimings {
  /** The lease TTL (`WAYMARK_LEASE_TTL_MS`): min(timeout, max(5 s, timeout / 6)). Renewed every third of it. */
  leaseTtlMs: number;
  /**
   * The wake queue's visibility timeout: timeout + lease TTL + {@link START_SLACK_SECONDS}. A
   * wake's message stays hidden while its invocation can still run, and reappears once the
   * lease of an invocation that died has lapsed.
   */
  visibilityTimeoutSeconds: number;
  /**
   * The longest a run whose invocation crashed (killed, out of memory, timed out) waits before it
   * resumes: its wake's message reappears at most a visibility timeout after it was received,
   * and finds the dead invocation's lease lapsed. Add the event source's poll and, if no
   * container is warm, a cold start.
   */
  worstCaseResumeMs: number;
}

/**
 * The lease TTL and visibility timeout for a function timeout, and the worst-case resume time
 * they give a crashed invocation's run. The `DurableFunction` construct sets both from its
 * `timeout`.
 *
 * @example
 * ```ts
 * failoverTimings(60); // { leaseTtlMs: 10_000, visibilityTimeoutSeconds: 85, worstCaseResumeMs: 85_000 }
 * ```
 */
export function failoverTimings(functionTimeoutSeconds: number): FailoverTimings {
  if (!Number.isFinite(functionTimeoutSeconds) || functionTimeoutSeconds <= 0) {
    throw new ConfigurationError(`the function timeout must be a positive number of seconds, got ${functionTimeoutSeconds}`);
  }
  const timeoutMs = functionTimeoutSeconds * 1_000;
  const leaseTtlMs = Math.round(Math.min(timeoutMs, Math.max(5_000, timeoutMs / 6)));
  const visibilityTimeoutSeconds = Math.ceil(functionTimeoutSeconds + leaseTtlMs / 1_000 + START_SLACK_SECONDS);
  return { leaseTtlMs, visibilityTimeoutSeconds, worstCaseResumeMs: visibilityTimeoutSeconds * 1_000 };
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
  deadlineMarginMs: "WAYMARK_DEADLINE_MARGIN_MS",
  leaseTtlMs: "WAYMARK_LEASE_TTL_MS",
  maxInvocations: "WAYMARK_MAX_INVOCATIONS",
  webhookSecret: "WAYMARK_WEBHOOK_SECRET",
  webhookSecretArn: "WAYMARK_WEBHOOK_SECRET_ARN",
  webhookSecretParameter: "WAYMARK_WEBHOOK_SECRET_PARAMETER",
  webhookSecretCreate: "WAYMARK_WEBHOOK_SECRET_CREATE",
  publicUrl: "WAYMARK_PUBLIC_URL",
  payloadBucket: "WAYMARK_PAYLOAD_BUCKET",
  payloadInlineBytes: "WAYMARK_PAYLOAD_INLINE_BYTES",
  payloadMaxBytes: "WAYMARK_PAYLOAD_MAX_BYTES",
  childFunctions: "WAYMARK_CHILD_FUNCTIONS",
  parentQueues: "WAYMARK_PARENT_QUEUES",
  watchdogHostedOnly: "WAYMARK_WATCHDOG_HOSTED_ONLY",
  watchdogOrphansAfterMs: "WAYMARK_WATCHDOG_ORPHANS_AFTER_MS",
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
  /** "true" or "false" (unset: false). */
  const flag = (key: keyof typeof ENV): boolean => {
    const raw = text(key, false);
    if (raw !== "" && raw !== "true" && raw !== "false") problems.push(`${ENV[key]} must be "true" or "false", got "${raw}"`);
    return raw === "true";
  };
  const secret = text("webhookSecret", false);
  const secretArn = text("webhookSecretArn", false);
  const secretParameter = text("webhookSecretParameter", false);
  const secretCreate = flag("webhookSecretCreate");
  const publicUrl = text("publicUrl", false);
  if (env[ENV.deadlineMarginMs]) config.deadlineMarginMs = num("deadlineMarginMs", DEFAULT_DEADLINE_MARGIN_MS);
  if (secret) config.webhookSecret = secret;
  if (secretArn && secretParameter) problems.push(`${ENV.webhookSecretArn} and ${ENV.webhookSecretParameter} are both set: the webhook secret comes from one place`);
  if (secretCreate && !secretParameter) problems.push(`${ENV.webhookSecretCreate} needs ${ENV.webhookSecretParameter} (the parameter to create)`);
  if (secretArn) config.webhookSecretArn = secretArn;
  if (secretParameter) {
    if (!/^[a-zA-Z0-9_.\-/:]{1,2048}$/.test(secretParameter)) problems.push(`${ENV.webhookSecretParameter} is not a parameter name: "${secretParameter}"`);
    config.webhookSecretParameter = secretParameter;
    if (secretCreate) config.webhookSecretCreate = true;
  }
  if (publicUrl) config.publicUrl = publicUrl.replace(/\/+$/, "");
  const payloadBucket = text("payloadBucket", false);
  if (payloadBucket) config.payloadBucket = payloadBucket;
  if (env[ENV.payloadInlineBytes]) config.payloadInlineBytes = num("payloadInlineBytes", 0);
  if (env[ENV.payloadMaxBytes]) config.payloadMaxBytes = num("payloadMaxBytes", 0);
  const childFunctions = list("childFunctions");
  if (childFunctions.length > 0) config.childFunctions = childFunctions;
  const parentQueues = list("parentQueues");
  if (parentQueues.length > 0) config.parentQueues = parentQueues;
  if (flag("watchdogHostedOnly")) config.watchdogHostedOnly = true;
  if (env[ENV.watchdogOrphansAfterMs]) {
    if (!config.watchdogHostedOnly) problems.push(`${ENV.watchdogOrphansAfterMs} needs ${ENV.watchdogHostedOnly}=true`);
    config.watchdogOrphansAfterMs = num("watchdogOrphansAfterMs", 0);
  }
  if (problems.length > 0) throw new ConfigurationError(`Waymark's Lambda configuration is incomplete: ${problems.join("; ")}`);
  return config;
}
