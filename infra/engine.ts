/**
 * `DurableEngine`: what several durable functions can share — the journal table (with its stream
 * and retention), the payload bucket and the webhook secret. Every `DurableFunction` has one:
 * its own by default, or another's (`engine: orders.engine`, or a `DurableEngine` both take).
 *
 * What stays per function, and why: a wake for a run must reach a function that hosts the run's
 * workflow, and SQS cannot route a message to one consumer of a queue among several. So each
 * function keeps its own wake queue and dead-letter queue (a redrive goes back to the one
 * function that can run those wakes), its own schedule group and Scheduler role (they deliver to
 * that queue), its own watchdog (which, on a shared table, wakes only runs of workflows its
 * function hosts), role, logs, alarms and webhook URL.
 */
import { CfnOutput, Duration, Lazy, RemovalPolicy, Validations } from "aws-cdk-lib";
import type * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import type * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import type * as iam from "aws-cdk-lib/aws-iam";
import type * as lambda from "aws-cdk-lib/aws-lambda";
import type * as s3 from "aws-cdk-lib/aws-s3";
import { Construct } from "constructs";
import { ENV } from "waymark/aws";
import { ALARM_SETS, type AlarmSet } from "./alarms.ts";
import { journalTable } from "./journal-table.ts";
import { payloadBucket } from "./payload-bucket.ts";
import { Retention } from "./retention.ts";
import { WebhookSecret, type WebhookSecretOption } from "./webhook-secret.ts";

/**
 * `DurableEngine`'s props: retention, removal policy, payloads, the webhook secret and the
 * engine's alarms.
 */
export interface DurableEngineProps {
  /** Days a finished run is kept (DynamoDB TTL on its meta item, then the stream deletes the rest) → every function's `WAYMARK_RETENTION_DAYS`. @default 30 */
  readonly retentionDays?: number;
  /** What happens to the journal table and the payload bucket when the stack goes. `DESTROY` also turns off deletion protection. @default RemovalPolicy.RETAIN */
  readonly removalPolicy?: RemovalPolicy;
  /**
   * Store step results, inputs, signal payloads and run results over a function's
   * `payloadInlineBytes` in an S3 bucket, instead of refusing them. @default true
   */
  readonly payloads?: boolean;
  /** The longest a run stays in flight: payload objects expire this long plus `retentionDays` after they are written. @default 365 days */
  readonly maxRunDuration?: Duration;
  /**
   * The webhook secret: an existing SecureString parameter (`ssm.StringParameter.fromSecureStringParameterAttributes`)
   * or Secrets Manager secret. @default a standard SecureString parameter named for this engine,
   * which its first function creates with a random value when it first reads it
   */
  readonly webhookSecret?: WebhookSecretOption;
  /** `"full"` alarms on retention failures too ($0.10 a month); the functions' own alarms are set on each function. @default "minimal" */
  readonly alarms?: AlarmSet;
  /** Actions of the engine's alarms. @default none */
  readonly alarmActions?: readonly cloudwatch.IAlarmAction[];
}

/** What the engine needs of a function that joins it. */
export interface EngineMember {
  readonly fn: lambda.Function;
  readonly role: iam.IRole;
  /** How often its watchdog sweeps. */
  readonly watchdogInterval: Duration;
  /** Whether it has a webhook (and so reads the secret). */
  readonly webhook: boolean;
}

/** Where an engine made by a function puts its resources: the function's own scope, as before engines existed. */
const HOME = Symbol("waymark.engine.home");
type EngineInternalProps = DurableEngineProps & { [HOME]?: Construct };

/** A run that is this many of the slowest watchdog intervals overdue (plus a sweep's grace) has no host among the engine's functions. */
const ORPHAN_SWEEPS = 2;
/** The watchdog's grace for wakes in flight (`sweepOverdueRuns`), and a minute of slack. */
const ORPHAN_SLACK = Duration.minutes(3);

/**
 * The journal, payload bucket, retention and webhook secret that durable functions share.
 *
 * @example
 * ```ts
 * const engine = new DurableEngine(this, "Engine", { retentionDays: 90 });
 * new DurableFunction(this, "Orders", { entry: "functions/order-flow.ts", handler: "orderFlow", engine });
 * new DurableFunction(this, "Refunds", { entry: "functions/refund-flow.ts", handler: "refundFlow", engine });
 * ```
 */
export class DurableEngine extends Construct {
  readonly table: dynamodb.TableV2;
  /** Values stored by reference; undefined with `payloads: false`. */
  readonly payloadBucket: s3.Bucket | undefined;
  readonly webhookSecret: WebhookSecret;
  readonly retentionDays: number;
  readonly alarmSet: AlarmSet;
  /** Where this engine's resources are: itself, or the function that made it. */
  private readonly home: Construct;
  private readonly members: EngineMember[] = [];
  private readonly alarmActions: readonly cloudwatch.IAlarmAction[];
  private retentionOf: Retention | undefined;
  private secretOutput = false;

  constructor(scope: Construct, id: string, props: DurableEngineProps = {}) {
    super(scope, id);
    this.home = (props as EngineInternalProps)[HOME] ?? this;
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;
    this.retentionDays = props.retentionDays ?? 30;
    check(Number.isInteger(this.retentionDays) && this.retentionDays > 0, `retentionDays must be a positive integer, got ${this.retentionDays}`);
    this.alarmSet = props.alarms ?? "minimal";
    check(ALARM_SETS.includes(this.alarmSet), `alarms must be one of ${ALARM_SETS.join(", ")}, got "${String(this.alarmSet)}"`);
    this.alarmActions = props.alarmActions ?? [];
    this.table = journalTable(this.home, "Journal", removalPolicy);
    const maxRunDays = (props.maxRunDuration ?? Duration.days(365)).toDays();
    this.payloadBucket = props.payloads === false ? undefined : payloadBucket(this.home, "Payloads", { retentionDays: this.retentionDays, maxRunDays, removalPolicy });
    this.webhookSecret = WebhookSecret.forEngine(this.home, props.webhookSecret);
    if (this.payloadBucket) {
      Validations.of(this.payloadBucket).acknowledge({
        id: "AwsSolutions-S1",
        reason: "Only the roles of this engine's functions read or write the bucket (private, TLS only); every object is named in the journal with its hash. Turn on access logs or CloudTrail data events to an audit bucket of your own if needed",
      });
    }
    new CfnOutput(this.home, "JournalTableName", { description: "The journal table (runs and their steps)", value: this.table.tableName });
  }

  /**
   * Retention of expired runs: the journal stream's mapping, on the engine's first function (a
   * stream takes two readers at most, and one purge per run is enough). Undefined until a
   * function joins.
   */
  get retention(): Retention | undefined {
    return this.retentionOf;
  }

  /** The functions on this engine, in the order they joined. */
  get functions(): readonly lambda.IFunction[] {
    return this.members.map((m) => m.fn);
  }

  /** @internal Made by `DurableFunction` for itself: the resources keep the ids they had before engines existed. */
  static _ownedBy(fn: Construct, props: DurableEngineProps): DurableEngine {
    return new DurableEngine(fn, "Engine", { ...props, [HOME]: fn } as EngineInternalProps);
  }

  /** @internal A function joins: the first also hosts retention; on a shared table every watchdog sweeps only its own workflows. */
  _join(member: EngineMember): void {
    this.members.push(member);
    if (this.members.length === 1) {
      this.retentionOf = new Retention(this.home, "Retention", { table: this.table, fn: member.fn, role: member.role, alarm: this.alarmSet === "full", alarmActions: this.alarmActions });
    }
    if (member.webhook && !this.secretOutput) {
      this.secretOutput = true;
      const secret = this.webhookSecret;
      if (secret.secret) new CfnOutput(this.home, "WebhookSecretArn", { description: "Secrets Manager secret that signs webhook requests", value: secret.secret.secretArn });
      else new CfnOutput(this.home, "WebhookSecretParameter", { description: "SSM SecureString parameter that signs webhook requests (made by the function on its first invocation)", value: secret.parameterName ?? "" });
    }
    if (this.members.length === 2) {
      const [first] = this.members as [EngineMember, ...EngineMember[]];
      first.fn.addEnvironment(ENV.watchdogHostedOnly, "true");
      first.fn.addEnvironment(ENV.watchdogOrphansAfterMs, Lazy.string({ produce: () => String(this.orphansAfter().toMilliseconds()) }));
    }
    if (this.members.length >= 2) member.fn.addEnvironment(ENV.watchdogHostedOnly, "true");
  }

  /** The environment every function of this engine gets (its own wake queue and schedules are added by the function). */
  environment(webhook: boolean): Record<string, string> {
    return {
      [ENV.tableName]: this.table.tableName,
      [ENV.retentionDays]: String(this.retentionDays),
      ...(webhook ? this.webhookSecret.environment() : {}),
      ...(this.payloadBucket ? { [ENV.payloadBucket]: this.payloadBucket.bucketName } : {}),
    };
  }

  /**
   * @internal A function joining this engine takes its settings: one given that differs would be
   * ignored in silence, so it is refused.
   */
  _checkSettings(props: DurableEngineProps): void {
    const refuse = (name: string, engines: string) => {
      throw new Error(`DurableFunction: ${name} belongs to the engine it shares (${engines}): leave it out, or set it where the engine is made`);
    };
    if (props.retentionDays !== undefined && props.retentionDays !== this.retentionDays) refuse("retentionDays", `${this.retentionDays} days`);
    if (props.payloads !== undefined && props.payloads !== (this.payloadBucket !== undefined)) refuse("payloads", this.payloadBucket ? "a payload bucket" : "no payload bucket");
    if (props.maxRunDuration !== undefined) refuse("maxRunDuration", "the payload bucket's lifecycle");
    if (props.webhookSecret !== undefined) refuse("webhookSecret", "one secret signs for every function on it");
  }

  /** How overdue a run must be before the first function's watchdog takes it as nobody's. */
  orphansAfter(): Duration {
    const slowest = Math.max(...this.members.map((m) => m.watchdogInterval.toSeconds()));
    return Duration.seconds(ORPHAN_SWEEPS * slowest + ORPHAN_SLACK.toSeconds());
  }
}

/**
 * The engine settings among a function's props, for the engine a function makes for itself.
 *
 * @example
 * ```ts
 * engineSettings({ entry: "f.ts", retentionDays: 7 }); // { retentionDays: 7 }
 * ```
 */
export function engineSettings(props: DurableEngineProps): DurableEngineProps {
  const keys = ["retentionDays", "removalPolicy", "payloads", "maxRunDuration", "webhookSecret", "alarms", "alarmActions"] as const;
  return Object.fromEntries(keys.filter((k) => props[k] !== undefined).map((k) => [k, props[k]])) as DurableEngineProps;
}

function check(ok: boolean, message: string): asserts ok {
  if (!ok) throw new Error(`DurableEngine: ${message}`);
}
