/**
 * `DurableFunction`'s props: what a user sets, each with its default.
 */
import type { Duration, RemovalPolicy } from "aws-cdk-lib";
import type * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import * as lambda from "aws-cdk-lib/aws-lambda";
import type { BundlingOptions, NodejsFunctionProps } from "aws-cdk-lib/aws-lambda-nodejs";
import type * as logs from "aws-cdk-lib/aws-logs";
import type { AlarmSet } from "./alarms.ts";
import type { DurableEngine } from "./engine.ts";
import type { WebhookSecretOption } from "./webhook-secret.ts";

/** The runtime the function gets unless `functionProps.runtime` says otherwise: the newest Lambda Node runtime Waymark is tested on. */
export const DEFAULT_RUNTIME = lambda.Runtime.NODEJS_24_X;

/** `DurableFunction`'s props: the entry and handler, and every setting with its default. */
export interface DurableFunctionProps {
  /** The file that exports the workflow (`durable()`'s result is the handler). */
  readonly entry: string;
  /** The name of that export. @default "handler" */
  readonly handler?: string;
  /** @default 1024 */
  readonly memorySize?: number;
  /**
   * One invocation's limit; a run that needs longer checkpoints and continues. The lease TTL
   * (`WAYMARK_LEASE_TTL_MS`) and the wake queue's visibility timeout derive from it, and with
   * them the longest a crashed invocation's run waits to resume (`failoverTimings`: 85 s for
   * 1 minute). @default 1 minute
   */
  readonly timeout?: Duration;
  /**
   * Run on another function's engine (`orders.engine`) or a `DurableEngine`: one journal table,
   * payload bucket, retention and webhook secret for them all. This function keeps its own wake
   * queue and DLQ, schedules, watchdog, role, logs and alarms; the engine's settings
   * (`retentionDays`, `payloads`, `maxRunDuration`, `webhookSecret`) are the engine's, and giving
   * another value here is an error. @default an engine of its own, made from this function's props
   */
  readonly engine?: DurableEngine;
  /** Days a finished run is kept (DynamoDB TTL on its meta item, then the stream deletes the rest) → `WAYMARK_RETENTION_DAYS`. An engine setting. @default 30 */
  readonly retentionDays?: number;
  /** Most concurrent invocations the wake queue drives (the SQS event source's `maxConcurrency`, 2–1,000). @default 10 */
  readonly maxConcurrency?: number;
  /** Wakes per invocation (1–10). @default 10 */
  readonly batchSize?: number;
  /** Receives of one wake before it goes to the dead-letter queue. @default 10 */
  readonly maxReceiveCount?: number;
  /** The webhook: a Function URL, and the engine's secret to sign with. Without it, runs start by direct invocation only. @default true */
  readonly webhook?: boolean;
  /**
   * OpenTelemetry tracing of steps and wakes (needs `@opentelemetry/api` in the bundle). Off, the
   * tracing code is left out of the bundle (esbuild's `define` of `WAYMARK_TRACING`), as the
   * webhook's routes and approver page are with `webhook: false`. @default false
   */
  readonly tracing?: boolean;
  /**
   * The webhook secret, if you bring one: an existing SecureString parameter or Secrets Manager
   * secret. An engine setting. @default a standard SecureString parameter (free), which the
   * function creates with a random value on its first invocation (`…WebhookSecretParameter` output)
   */
  readonly webhookSecret?: WebhookSecretOption;
  /**
   * The webhook's public base URL (a custom domain in front of the function), so approval links
   * are complete URLs → `WAYMARK_PUBLIC_URL`. The Function URL cannot be used here on the first
   * deploy (see docs/guides/aws.md, "Approval links and the function's own URL"); without it, links carry only their token path.
   */
  readonly publicUrl?: string;
  /** What happens to the logs, and to the journal table and payload bucket of an engine this function makes, when the stack goes. `DESTROY` also turns off deletion protection. @default RemovalPolicy.RETAIN */
  readonly removalPolicy?: RemovalPolicy;
  /** How often the watchdog looks for overdue runs. @default 5 minutes */
  readonly watchdogInterval?: Duration;
  /** Per-run budget of invocations (the recursion guard) → `WAYMARK_MAX_INVOCATIONS`. @default the runtime's, 10,000 */
  readonly maxInvocationsPerRun?: number;
  /** @default logs.RetentionDays.ONE_MONTH */
  readonly logRetention?: logs.RetentionDays;
  /**
   * Which alarms (each $0.10 a month): `"minimal"`, one on the dead-letter queue (a wake gave up:
   * a run is stuck); `"full"`, also the oldest wake, function errors, runs out of budget, and
   * retention failures on an engine this function makes; `"none"`. @default "minimal"
   */
  readonly alarms?: AlarmSet;
  /** With `alarms: "full"`: the wake age that means the queue is not drained. @default 15 min (SQS's longest delay) + the wake queue's visibility timeout + 5 min */
  readonly oldestWakeAlarmAge?: Duration;
  /** Actions of every alarm (an SNS topic, …). @default none */
  readonly alarmActions?: readonly cloudwatch.IAlarmAction[];
  /** Extra environment variables, applied over Waymark's. */
  readonly environment?: Readonly<Record<string, string>>;
  /**
   * Bundling options, applied over the defaults in `bundling.ts` (`durableBundling()`): minified
   * ESM without esbuild's `keepNames` (set `keepNames: true` if your code reads
   * `constructor.name`), the AWS SDK external, a source map without the sources' text (the
   * function runs with `--enable-source-maps`, which parses the map at every cold start).
   */
  readonly bundling?: BundlingOptions;
  /**
   * Store step results, inputs, signal payloads and run results over `payloadInlineBytes` in an S3
   * bucket the construct creates, instead of refusing them. An engine setting. @default true
   */
  readonly payloads?: boolean;
  /** Values over this many JSON bytes go to the bucket → `WAYMARK_PAYLOAD_INLINE_BYTES`. @default 64 KiB */
  readonly payloadInlineBytes?: number;
  /** Values over this many JSON bytes are refused, once → `WAYMARK_PAYLOAD_MAX_BYTES`. @default 16 MiB */
  readonly payloadMaxBytes?: number;
  /** The longest a run stays in flight: payload objects expire this long plus `retentionDays` after they are written. An engine setting. @default 365 days */
  readonly maxRunDuration?: Duration;
  /** Escape hatch: any other function property, applied last. */
  readonly functionProps?: Partial<NodejsFunctionProps>;
}
