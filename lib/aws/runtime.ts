/**
 * The engine wired to AWS: the DynamoDB journal, wakes through SQS and the Scheduler, and the
 * webhook secret from Parameter Store or Secrets Manager (`webhook-secret.ts`). Built once per
 * Lambda container, on its first invocation.
 */
import type { SchedulerClient } from "@aws-sdk/client-scheduler";
import type { SQSClient } from "@aws-sdk/client-sqs";
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { S3Client } from "@aws-sdk/client-s3";
import type { LambdaClient } from "@aws-sdk/client-lambda";
import type { SSMClient } from "@aws-sdk/client-ssm";
import type { SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { Client } from "../client.ts";
import type { AnyWorkflow } from "../core/definition.ts";
import { Engine, type LogEntry } from "../core/engine.ts";
import { createJsonLogger, type Logger } from "../observe/logger.ts";
import type { EmfOptions } from "../observe/metrics.ts";
import { entrySink } from "../observe/sinks.ts";
import { createRegistry, type Registry } from "../core/registry.ts";
import { createApprovalLinks } from "../http/tokens.ts";
import { linksWithoutSecret, SECRET_HINTS } from "../http/no-links.ts";
import type { JournalLimits } from "../core/journal-limits.ts";
import { type ApprovalLinks, type Clock, systemClock } from "../ports.ts";
import { type AwsRuntimeConfig, configFromEnv } from "./config.ts";
import { createJournalDynamoClient } from "./dynamodb-client.ts";
import { DynamoJournalStore } from "./dynamodb-store.ts";
import { SchedulerWakes } from "./scheduler-wakes.ts";
import { SqsWakes } from "./sqs-wakes.ts";
import { AwsWakeQueue } from "./wakes.ts";
import { S3PayloadStore } from "./s3-payloads.ts";
import { LambdaChildren } from "./remote-children.ts";
import { readWebhookSecret, type SecretReader, webhookSecretSource } from "./webhook-secret.ts";

/** How often, at most, an invocation looks for a cancellation beside its appends (see `EngineOptions.cancelProbeMs`). */
export const AWS_CANCEL_PROBE_MS = 250;

export type { SecretReader } from "./webhook-secret.ts";

/**
 * Options of `createAwsRuntime` and `createLambdaHandler`: the workflows, the configuration (else
 * from the environment), SDK clients, the secret reader, logging, metrics, tracing and journal
 * limits.
 */
export interface AwsRuntimeOptions {
  workflows: readonly AnyWorkflow[];
  /** Default: read from the environment the construct sets. */
  config?: AwsRuntimeConfig;
  /** Injected clients (tests, custom endpoints); the rest are created with defaults. */
  clients?: { dynamodb?: DynamoDBClient; sqs?: SQSClient; scheduler?: SchedulerClient; s3?: S3Client; lambda?: LambdaClient; ssm?: SSMClient; secretsManager?: SecretsManagerClient };
  /** Reads the webhook secret from where the configuration says it is. Default: `readWebhookSecret` (SSM or Secrets Manager). */
  readSecret?: SecretReader;
  clock?: Clock;
  /** Every structured entry, with its level (tests, custom sinks). Given alone, nothing is written to stdout. */
  log?: (entry: LogEntry & { level: "info" | "warn" | "error" }) => void;
  /**
   * Where log lines go: a Powertools `Logger`, or any object with `info`/`warn`/`error`.
   * Default (unless `log` is given): lines in Powertools Logger's shape on stdout.
   */
  logger?: Logger;
  /** Embedded Metric Format lines per invocation. Default: on in Lambda (namespace `Waymark`). */
  metrics?: boolean | EmfOptions;
  /** OpenTelemetry spans when `@opentelemetry/api` is installed. Default: true. */
  tracing?: boolean;
  /**
   * How long one incarnation's journal may grow before a warning, and before the run fails
   * with `JournalLimitError` (the engine's `journalLimits`; defaults: warn at 5,000 records or
   * 4 MiB, fail past 50,000 records or 32 MiB). `createLambdaHandler({ workflows, journalLimits })`.
   */
  journalLimits?: Partial<JournalLimits>;
}

/**
 * The AWS runtime: the configuration, the hosted workflows, and the store, wakes, engine and
 * client built from them.
 */
export interface AwsRuntime {
  config: AwsRuntimeConfig;
  workflows: Registry;
  store: DynamoJournalStore;
  wakes: AwsWakeQueue;
  sqs: SqsWakes;
  engine: Engine;
  client: Client;
  /** Children in other functions (`WAYMARK_CHILD_FUNCTIONS`), and parents in them. */
  remote: LambdaChildren;
  clock: Clock;
  /** The webhook secret, when one is configured. */
  secret: string | undefined;
  /** Mints approval links (with the secret), for waits and the status route. */
  links: ApprovalLinks | undefined;
  log: (entry: LogEntry & { level?: "info" | "warn" | "error" }) => void;
  /** The logger lines go to (it is given each invocation's Lambda context), if any. */
  logger: Logger | undefined;
}

/**
 * One JSON object per line, in Powertools Logger's shape (what CloudWatch Logs Insights
 * queries best).
 *
 * @example
 * ```ts
 * jsonLog({ level: "info", event: "wake", runId: "order-8472", outcome: "suspended" });
 * ```
 */
export function jsonLog(entry: LogEntry & { level: string }): void {
  const { level, ...rest } = entry;
  createJsonLogger()[level === "warn" || level === "error" ? level : "info"](`${entry.event}`, rest);
}

/**
 * Builds the AWS runtime.
 *
 * @example
 * ```ts
 * const runtime = await createAwsRuntime({ workflows: [orderFlow] }); // config from the environment
 * await runtime.client.start(orderFlow, { runId: "order-8472", input: order });
 * ```
 */
export async function createAwsRuntime(o: AwsRuntimeOptions): Promise<AwsRuntime> {
  const config = o.config ?? configFromEnv();
  const clock = o.clock ?? systemClock;
  const logger = o.logger ?? (o.log ? undefined : createJsonLogger());
  const metrics = o.metrics === true || (o.metrics === undefined && process.env.AWS_LAMBDA_FUNCTION_NAME) ? {} : o.metrics || undefined;
  const log = entrySink({ ...(o.log ? { log: o.log } : {}), ...(logger ? { logger } : {}), ...(metrics ? { metrics } : {}) });
  // Loaded only when tracing is on: a build that replaces `process.env.WAYMARK_TRACING` with
  // "off" (esbuild's `define`) leaves the tracing module and `@opentelemetry/api` out of the bundle.
  const traces = process.env.WAYMARK_TRACING === "off" || o.tracing === false ? undefined : await import("../observe/tracing.ts");
  const otel = await traces?.loadOpenTelemetry();
  const tracing = traces && otel ? traces.createTracing(async () => otel) : undefined;
  const workflows = createRegistry(o.workflows);
  const store = new DynamoJournalStore({ client: o.clients?.dynamodb ?? (await createJournalDynamoClient()), tableName: config.tableName, retentionDays: config.retentionDays });
  // SQS and the Scheduler: created on first use when not injected (the Scheduler's SDK loads
  // only for a wake past SQS's 15-minute delay).
  const sqs = new SqsWakes({ client: o.clients?.sqs, queueUrl: config.queueUrl });
  const scheduler = new SchedulerWakes({
    client: o.clients?.scheduler,
    groupName: config.scheduleGroup,
    queueArn: config.queueArn,
    roleArn: config.schedulerRoleArn,
    deadLetterArn: config.schedulerDeadLetterArn,
  });
  const wakes = new AwsWakeQueue({ sqs, scheduler, clock });
  const secretSource = webhookSecretSource(config);
  const secret = config.webhookSecret ?? (secretSource ? await (o.readSecret ?? ((source) => readWebhookSecret(source, o.clients ?? {})))(secretSource) : undefined);
  const links = secret ? createApprovalLinks({ secret, ...(config.publicUrl ? { baseUrl: config.publicUrl } : {}) }) : undefined;
  // Values by reference go to the construct's bucket; S3's SDK loads on the first one.
  const payloads = config.payloadBucket
    ? {
        store: new S3PayloadStore({ bucket: config.payloadBucket, ...(o.clients?.s3 ? { client: o.clients.s3 } : {}) }),
        ...(config.payloadInlineBytes === undefined ? {} : { inlineBytes: config.payloadInlineBytes }),
        ...(config.payloadMaxBytes === undefined ? {} : { maxBytes: config.payloadMaxBytes }),
      }
    : undefined;
  const ports = { store, wakes, clock, workflows, ...(payloads ? { payloads } : {}) };
  // Children in other functions: started by invoking them, their ends sent to our queue.
  const remote = new LambdaChildren({
    functions: config.childFunctions ?? [],
    replyTo: config.queueUrl,
    ...(o.clients?.lambda ? { lambda: o.clients.lambda } : {}),
    ...(o.clients?.sqs ? { sqs: o.clients.sqs } : {}),
  });
  const engine = new Engine({
    ...ports,
    ...(traces && tracing ? { wakes: traces.traceWakes(wakes, tracing), hooks: tracing.hooks } : {}),
    owner: `lambda:${process.env.AWS_LAMBDA_LOG_STREAM_NAME ?? process.pid}`,
    leaseTtlMs: config.leaseTtlMs,
    maxInvocations: config.maxInvocations,
    // A cancellation probe is a GetItem beside the append: look at most every 250 ms, so quick
    // steps cost one PutItem each and a cancel still stops the next step within 250 ms.
    cancelProbeMs: AWS_CANCEL_PROBE_MS,
    links: links ?? linksWithoutSecret(SECRET_HINTS.aws),
    ...(o.journalLimits ? { journalLimits: o.journalLimits } : {}),
    remote,
    log,
  });
  return { config, workflows, store, wakes, sqs, engine, client: new Client(ports), remote, clock, secret, links, log, logger };
}
