/**
 * `DurableFunction`: one construct that deploys a Waymark workflow — its journal table, wake
 * queue, wake schedules, watchdog, webhook and alarms — around one Lambda function.
 */
import { type CfnElement, CfnOutput, Duration, Lazy, Names, RemovalPolicy, Stack, Token, Validations } from "aws-cdk-lib";
import type * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import type * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import * as iam from "aws-cdk-lib/aws-iam";
import * as lambda from "aws-cdk-lib/aws-lambda";
import { SqsEventSource } from "aws-cdk-lib/aws-lambda-event-sources";
import { type BundlingOptions, NodejsFunction, type NodejsFunctionProps } from "aws-cdk-lib/aws-lambda-nodejs";
import * as logs from "aws-cdk-lib/aws-logs";
import * as scheduler from "aws-cdk-lib/aws-scheduler";
import * as secretsmanager from "aws-cdk-lib/aws-secretsmanager";
import type * as s3 from "aws-cdk-lib/aws-s3";
import type * as sqs from "aws-cdk-lib/aws-sqs";
import { Construct } from "constructs";
import { CHILD_ENTRY_ALIAS, ENV, failoverTimings, SQS_MAX_DELAY_SECONDS } from "waymark/aws";
import { DurableAlarms } from "./alarms.ts";
import { durableBundling } from "./bundling.ts";
import { journalTable } from "./journal-table.ts";
import { payloadBucket } from "./payload-bucket.ts";
import { durableFunctionStatements, schedulerDeliveryRole } from "./permissions.ts";
import { Retention } from "./retention.ts";
import { WakeQueues } from "./wake-queues.ts";
import { Watchdog } from "./watchdog.ts";

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
  /** Days a finished run is kept (DynamoDB TTL on its meta item, then the stream deletes the rest) → `WAYMARK_RETENTION_DAYS`. @default 30 */
  readonly retentionDays?: number;
  /** Most concurrent invocations the wake queue drives (the SQS event source's `maxConcurrency`, 2–1,000). @default 10 */
  readonly maxConcurrency?: number;
  /** Wakes per invocation (1–10). @default 10 */
  readonly batchSize?: number;
  /** Receives of one wake before it goes to the dead-letter queue. @default 10 */
  readonly maxReceiveCount?: number;
  /** The webhook: a Function URL and a generated secret. Without it, runs start by direct invocation only. @default true */
  readonly webhook?: boolean;
  /**
   * The webhook's public base URL (a custom domain in front of the function), so approval links
   * are complete URLs → `WAYMARK_PUBLIC_URL`. The Function URL cannot be used here on the first
   * deploy (see the README); without it, links carry only their token path.
   */
  readonly publicUrl?: string;
  /** What happens to the journal table and the logs when the stack goes. `DESTROY` also turns off deletion protection. @default RemovalPolicy.RETAIN */
  readonly removalPolicy?: RemovalPolicy;
  /** How often the watchdog looks for overdue runs. @default 5 minutes */
  readonly watchdogInterval?: Duration;
  /** Per-run budget of invocations (the recursion guard) → `WAYMARK_MAX_INVOCATIONS`. @default the runtime's, 10,000 */
  readonly maxInvocationsPerRun?: number;
  /** @default logs.RetentionDays.ONE_MONTH */
  readonly logRetention?: logs.RetentionDays;
  /** The wake age that means the queue is not drained. @default 15 min (SQS's longest delay) + the wake queue's visibility timeout + 5 min */
  readonly oldestWakeAlarmAge?: Duration;
  /** Actions of every alarm (an SNS topic, …). @default none */
  readonly alarmActions?: readonly cloudwatch.IAlarmAction[];
  /** Extra environment variables, applied over Waymark's. */
  readonly environment?: Readonly<Record<string, string>>;
  /** Bundling options, applied over the defaults in `bundling.ts`. */
  readonly bundling?: BundlingOptions;
  /**
   * Store step results, inputs, signal payloads and run results over `payloadInlineBytes` in an S3
   * bucket the construct creates, instead of refusing them. @default true
   */
  readonly payloads?: boolean;
  /** Values over this many JSON bytes go to the bucket → `WAYMARK_PAYLOAD_INLINE_BYTES`. @default 64 KiB */
  readonly payloadInlineBytes?: number;
  /** Values over this many JSON bytes are refused, once → `WAYMARK_PAYLOAD_MAX_BYTES`. @default 16 MiB */
  readonly payloadMaxBytes?: number;
  /** The longest a run stays in flight: payload objects expire this long plus `retentionDays` after they are written. @default 365 days */
  readonly maxRunDuration?: Duration;
  /** Escape hatch: any other function property, applied last. */
  readonly functionProps?: Partial<NodejsFunctionProps>;
}

/**
 * A durable Waymark function with everything it needs.
 *
 * @example
 * ```ts
 * import { DurableFunction } from "waymark/cdk";
 *
 * const orders = new DurableFunction(this, "Orders", {
 *   entry: "functions/order-flow.ts",
 *   handler: "orderFlow",
 *   timeout: Duration.minutes(2),
 *   retentionDays: 90,
 * });
 * orders.alarms.deadLetters.addAlarmAction(new SnsAction(topic));
 * ```
 */
export class DurableFunction extends Construct {
  readonly table: dynamodb.TableV2;
  /** Values stored by reference; undefined with `payloads: false`. */
  readonly payloadBucket: s3.Bucket | undefined;
  readonly queue: sqs.Queue;
  readonly deadLetterQueue: sqs.Queue;
  readonly function: NodejsFunction;
  readonly role: iam.Role;
  readonly logGroup: logs.LogGroup;
  readonly scheduleGroup: scheduler.ScheduleGroup;
  readonly schedulerRole: iam.Role;
  readonly watchdog: Watchdog;
  readonly retention: Retention;
  readonly functionUrl: lambda.FunctionUrl | undefined;
  readonly webhookSecret: secretsmanager.Secret | undefined;
  readonly alarms: DurableAlarms;
  /** Functions hosting this one's children in other deployments (`grantInvoke`), in grant order. */
  private readonly childFunctions: string[] = [];
  /** The parent's grant to invoke its children's functions (one statement, a resource per child). */
  private invokeChildren: iam.PolicyStatement | undefined;
  /** The alias parent functions invoke this one through (`waymark-children`), made by its first `grantInvoke`. */
  childEntry: lambda.Alias | undefined;
  /** The child's grant to send its ends to its parents' wake queues (a resource per parent). */
  private sendChildEnds: iam.PolicyStatement | undefined;
  /** The wake queues of the parents that may start children here (`WAYMARK_PARENT_QUEUES`). */
  private readonly parentQueues: string[] = [];

  constructor(scope: Construct, id: string, props: DurableFunctionProps) {
    super(scope, id);
    const stack = Stack.of(this);
    const timeout = props.timeout ?? Duration.minutes(1);
    check(timeout.toSeconds() >= 1 && timeout.toSeconds() <= 900, `timeout must be 1 s to 15 minutes (Lambda's limit), got ${timeout.toHumanString()}`);
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;
    const retentionDays = props.retentionDays ?? 30;
    check(Number.isInteger(retentionDays) && retentionDays > 0, `retentionDays must be a positive integer, got ${retentionDays}`);
    const batchSize = props.batchSize ?? 10;
    check(Number.isInteger(batchSize) && batchSize >= 1 && batchSize <= 10, `batchSize must be 1-10, got ${batchSize}`);
    if (props.publicUrl !== undefined && !Token.isUnresolved(props.publicUrl)) {
      check(/^https:\/\/[^\s/]+/.test(props.publicUrl), `publicUrl must be an https URL, got "${props.publicUrl}"`);
    }

    this.table = journalTable(this, "Journal", removalPolicy);
    const maxRunDays = (props.maxRunDuration ?? Duration.days(365)).toDays();
    this.payloadBucket = props.payloads === false ? undefined : payloadBucket(this, "Payloads", { retentionDays, maxRunDays, removalPolicy });
    const queues = new WakeQueues(this, "Wakes", { functionTimeout: timeout, maxReceiveCount: props.maxReceiveCount ?? 10 });
    this.queue = queues.queue;
    this.deadLetterQueue = queues.deadLetterQueue;

    // Wake schedules belong to the deployment: they go with it.
    // Named here (unique per stack and path) so the policy's schedule ARN is known when acknowledged below.
    const scheduleGroupName = Names.uniqueResourceName(this, { maxLength: 56, separator: "-" }) + "-wakes";
    this.scheduleGroup = new scheduler.ScheduleGroup(this, "WakeSchedules", { scheduleGroupName, removalPolicy: RemovalPolicy.DESTROY });
    this.schedulerRole = schedulerDeliveryRole(this, "SchedulerRole", this.scheduleGroup, this.queue, this.deadLetterQueue);

    // Secrets Manager rather than SSM: CloudFormation can generate a Secrets Manager secret's
    // value, so the secret never passes through a template, a shell or CI. CloudFormation
    // cannot create an SSM SecureString at all. On deletion Secrets Manager keeps it
    // recoverable for 30 days.
    this.webhookSecret =
      props.webhook === false
        ? undefined
        : new secretsmanager.Secret(this, "WebhookSecret", {
            description: "Waymark webhook secret: HMAC request signatures and approval-link tokens",
            generateSecretString: { passwordLength: 64, excludePunctuation: true, includeSpace: false },
            removalPolicy: RemovalPolicy.DESTROY,
          });

    this.logGroup = new logs.LogGroup(this, "Logs", { retention: props.logRetention ?? logs.RetentionDays.ONE_MONTH, removalPolicy });
    // Our own role, without AWSLambdaBasicExecutionRole: logs go to this log group only.
    this.role = new iam.Role(this, "FunctionRole", {
      description: "Waymark durable function: its journal, wake queue, wake schedules and webhook secret",
      assumedBy: new iam.ServicePrincipal("lambda.amazonaws.com"),
    });
    this.logGroup.grantWrite(this.role);
    for (const statement of durableFunctionStatements(stack, {
      table: this.table,
      queue: this.queue,
      scheduleGroup: this.scheduleGroup,
      schedulerRole: this.schedulerRole,
      secret: this.webhookSecret,
      payloadBucket: this.payloadBucket,
    })) {
      this.role.addToPrincipalPolicy(statement);
    }

    this.function = new NodejsFunction(this, "Function", {
      description: "Waymark durable function: wakes from SQS, the webhook, the watchdog, retention",
      entry: props.entry,
      handler: props.handler ?? "handler",
      runtime: lambda.Runtime.NODEJS_24_X,
      architecture: lambda.Architecture.ARM_64,
      memorySize: props.memorySize ?? 1024,
      timeout,
      role: this.role,
      logGroup: this.logGroup,
      bundling: durableBundling(props.bundling),
      environment: {
        ...this.runtimeEnvironment(retentionDays, timeout, props),
        NODE_OPTIONS: "--enable-source-maps",
        ...props.environment,
      },
      // A long run checkpoints and continues: it sends its own wake and Lambda receives it
      // again through SQS. Lambda's loop detection would stop that chain after 16 hops of one
      // triggering event and drop the wake. Waymark guards against runaway runs itself: a
      // per-run invocation budget in the journal (WAYMARK_MAX_INVOCATIONS) fails such a run.
      recursiveLoop: lambda.RecursiveLoop.ALLOW,
      ...props.functionProps,
    });
    this.function.addEventSource(
      new SqsEventSource(this.queue, { batchSize, reportBatchItemFailures: true, maxConcurrency: props.maxConcurrency ?? 10 }),
    );

    this.watchdog = new Watchdog(this, "Watchdog", { fn: this.function, interval: props.watchdogInterval ?? Duration.minutes(5) });
    this.retention = new Retention(this, "Retention", { table: this.table, fn: this.function, role: this.role, alarmActions: props.alarmActions ?? [] });

    if (this.webhookSecret) {
      // No IAM auth: browsers and mail links cannot sign SigV4. Every route authenticates
      // itself — system calls carry an HMAC signature under the webhook secret, approval links
      // a capability token — and refuses anything else before writing.
      this.functionUrl = this.function.addFunctionUrl({ authType: lambda.FunctionUrlAuthType.NONE });
      new CfnOutput(this, "WebhookUrl", { description: "The webhook (Function URL): signed routes and approval links", value: this.functionUrl.url });
      new CfnOutput(this, "WebhookSecretArn", { description: "Secrets Manager secret that signs webhook requests", value: this.webhookSecret.secretArn });
    }
    new CfnOutput(this, "FunctionName", { description: "Invoke with {\"waymark\":\"start\",\"runId\":…,\"input\":…} to start a run", value: this.function.functionName });
    new CfnOutput(this, "JournalTableName", { description: "The journal table (runs and their steps)", value: this.table.tableName });
    new CfnOutput(this, "LogGroupName", { description: "The function's logs: one JSON line per step and wake", value: this.logGroup.logGroupName });
    new CfnOutput(this, "DeadLetterQueueUrl", { description: "Wakes that could not be delivered or processed", value: this.deadLetterQueue.queueUrl });

    this.alarms = new DurableAlarms(this, "Alarms", {
      fn: this.function,
      queue: this.queue,
      deadLetterQueue: this.deadLetterQueue,
      oldestWakeAge: props.oldestWakeAlarmAge ?? Duration.seconds(SQS_MAX_DELAY_SECONDS + failoverTimings(timeout.toSeconds()).visibilityTimeoutSeconds + 300),
      actions: props.alarmActions ?? [],
    });
    this.acknowledgeNagRules(stack, scheduleGroupName);
  }

  /**
   * Lets `parent` run this function's workflows as its children (`step.invoke`, `step.start`):
   * the parent's role may invoke this function through its child-entry alias (which takes child
   * starts and cancels only), this function's
   * role may send to the parent's wake queue (where a child's end goes), this function is
   * listed in the parent's `WAYMARK_CHILD_FUNCTIONS`, and the parent's queue in this function's
   * `WAYMARK_PARENT_QUEUES` (a start naming any other reply queue is refused). Nothing else of either is shared: each
   * keeps its own table, queue and schedules. Both must be in one stack (the two grants refer to
   * each other, which across stacks is a dependency cycle).
   *
   * @example
   * ```ts
   * const payments = new DurableFunction(this, "Payments", { entry: "functions/payment-flow.ts" });
   * const orders = new DurableFunction(this, "Orders", { entry: "functions/order-flow.ts", handler: "orderFlow" });
   * payments.grantInvoke(orders); // orders' step.invoke("pay", paymentFlow, …) now reaches Payments
   * ```
   */
  grantInvoke(parent: DurableFunction): void {
    check(parent !== this, "a function hosts its own children already; grantInvoke is for another DurableFunction");
    check(Stack.of(parent) === Stack.of(this), "grantInvoke needs both functions in one stack (each grant refers to the other)");
    // Parents reach this function through its child-entry alias only: invoked through it, the
    // handler takes child starts and cancels and nothing else (lib/aws/child-entry.ts).
    this.childEntry ??= new lambda.Alias(this, "ChildEntry", { aliasName: CHILD_ENTRY_ALIAS, version: this.function.currentVersion, description: "Waymark: parent functions start and cancel children here" });
    const entry = this.childEntry.functionArn;
    if (parent.childFunctions.includes(entry)) return;
    if (parent.childFunctions.length === 0) {
      parent.function.addEnvironment(ENV.childFunctions, Lazy.string({ produce: () => parent.childFunctions.join(",") }));
      parent.invokeChildren = new iam.PolicyStatement({ sid: "InvokeChildren", actions: ["lambda:InvokeFunction"] });
      parent.role.addToPrincipalPolicy(parent.invokeChildren);
    }
    parent.childFunctions.push(entry);
    parent.invokeChildren?.addResources(entry);
    if (!this.sendChildEnds) {
      this.sendChildEnds = new iam.PolicyStatement({ sid: "SendChildEnds", actions: ["sqs:SendMessage"] });
      this.role.addToPrincipalPolicy(this.sendChildEnds);
      // The child accepts a parent's reply queue only from this list.
      this.function.addEnvironment(ENV.parentQueues, Lazy.string({ produce: () => this.parentQueues.join(",") }));
    }
    this.sendChildEnds.addResources(parent.queue.queueArn);
    this.parentQueues.push(parent.queue.queueUrl);
  }

  /** The environment `configFromEnv` (lib/aws/config.ts) reads. */
  private runtimeEnvironment(retentionDays: number, timeout: Duration, props: DurableFunctionProps): Record<string, string> {
    const env: Record<string, string> = {
      [ENV.tableName]: this.table.tableName,
      [ENV.queueUrl]: this.queue.queueUrl,
      [ENV.queueArn]: this.queue.queueArn,
      [ENV.scheduleGroup]: this.scheduleGroup.scheduleGroupName,
      [ENV.schedulerRoleArn]: this.schedulerRole.roleArn,
      [ENV.schedulerDeadLetterArn]: this.deadLetterQueue.queueArn,
      [ENV.retentionDays]: String(retentionDays),
      // With the queue's visibility timeout (wake-queues.ts), what bounds a crashed invocation's wait.
      [ENV.leaseTtlMs]: String(failoverTimings(timeout.toSeconds()).leaseTtlMs),
    };
    if (props.maxInvocationsPerRun !== undefined) env[ENV.maxInvocations] = String(props.maxInvocationsPerRun);
    if (this.webhookSecret) env[ENV.webhookSecretArn] = this.webhookSecret.secretArn;
    if (props.publicUrl !== undefined) env[ENV.publicUrl] = props.publicUrl;
    if (this.payloadBucket) env[ENV.payloadBucket] = this.payloadBucket.bucketName;
    if (props.payloadInlineBytes !== undefined) env[ENV.payloadInlineBytes] = String(props.payloadInlineBytes);
    if (props.payloadMaxBytes !== undefined) env[ENV.payloadMaxBytes] = String(props.payloadMaxBytes);
    return env;
  }

  /** cdk-nag AwsSolutions findings this design accepts, each with its reason. */
  private acknowledgeNagRules(stack: Stack, scheduleGroupName: string): void {
    const literal = (value: string, pseudo: string) => (Token.isUnresolved(value) ? `<AWS::${pseudo}>` : value);
    const schedules = `arn:<AWS::Partition>:scheduler:${literal(stack.region, "Region")}:${literal(stack.account, "AccountId")}:schedule/${scheduleGroupName}/*`;
    Validations.of(this.role).acknowledge({
      id: `AwsSolutions-IAM5[Resource::${schedules}]`,
      reason: "Wake schedules are named per run and wake at run time (scheduleName(runId, key)); the grant is every schedule of this function's own group and nothing else",
    });
    if (this.payloadBucket) {
      const bucketId = stack.resolve(stack.getLogicalId(this.payloadBucket.node.defaultChild as CfnElement)) as string;
      Validations.of(this.role).acknowledge({
        id: `AwsSolutions-IAM5[Resource::<${bucketId}.Arn>/runs/*]`,
        reason: "Payload objects are named by run and content hash at run time (runs/<runId>/<createdAt>/<sha256>); the grant is PutObject and GetObject under that prefix of this function's own bucket",
      });
      Validations.of(this.payloadBucket).acknowledge({
        id: "AwsSolutions-S1",
        reason: "Only this function's role reads or writes the bucket (private, TLS only); every object is named in the journal with its hash. Turn on access logs or CloudTrail data events to an audit bucket of your own if needed",
      });
    }
    Validations.of(this.function).acknowledge({
      id: "AwsSolutions-L1",
      reason: "nodejs22.x on purpose: the runtime Waymark is tested on, and the floor of AWS SDK v3 releases from 2027; move with functionProps.runtime",
    });
    if (this.webhookSecret) {
      Validations.of(this.webhookSecret).acknowledge({
        id: "AwsSolutions-SMG4",
        reason: "Rotating the webhook secret invalidates every approval link already mailed and every caller's signing key at once; rotate by hand when no approval is pending (see the README)",
      });
    }
  }
}

function check(ok: boolean, message: string): asserts ok {
  if (!ok) throw new Error(`DurableFunction: ${message}`);
}
