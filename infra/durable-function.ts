/**
 * `DurableFunction`: one construct that deploys a Waymark workflow — its wake queue, wake
 * schedules, watchdog, webhook and alarms around one Lambda function, on an engine (journal
 * table, payload bucket, retention, webhook secret) of its own or shared with other functions.
 */
import { CfnOutput, Duration, Lazy, Names, RemovalPolicy, Stack, Token } from "aws-cdk-lib";
import type * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import * as iam from "aws-cdk-lib/aws-iam";
import * as lambda from "aws-cdk-lib/aws-lambda";
import { SqsEventSource } from "aws-cdk-lib/aws-lambda-event-sources";
import { NodejsFunction } from "aws-cdk-lib/aws-lambda-nodejs";
import * as logs from "aws-cdk-lib/aws-logs";
import * as scheduler from "aws-cdk-lib/aws-scheduler";
import type * as s3 from "aws-cdk-lib/aws-s3";
import type * as sqs from "aws-cdk-lib/aws-sqs";
import { Construct } from "constructs";
import { CHILD_ENTRY_ALIAS, ENV, failoverTimings, SQS_MAX_DELAY_SECONDS } from "waymark/aws";
import { ALARM_SETS, DurableAlarms } from "./alarms.ts";
import { checkTracingPackage, durableBundling, SOURCE_MAP_NODE_OPTIONS, trimDefines } from "./bundling.ts";
import { DurableEngine, engineSettings } from "./engine.ts";
import { acknowledgeFunctionFindings } from "./nag.ts";
import { durableFunctionStatements, schedulerDeliveryRole } from "./permissions.ts";
import type { Retention } from "./retention.ts";
import { WakeQueues } from "./wake-queues.ts";
import { Watchdog } from "./watchdog.ts";
import type { WebhookSecret } from "./webhook-secret.ts";
import { DEFAULT_RUNTIME, type DurableFunctionProps } from "./durable-function-props.ts";

export { DEFAULT_RUNTIME, type DurableFunctionProps } from "./durable-function-props.ts";

/**
 * A durable Waymark function with everything it needs.
 *
 * @example
 * ```ts
 * import { DurableFunction } from "waymark/cdk";
 *
 * const orders = new DurableFunction(stack, "Orders", {
 *   entry: "functions/order-flow.ts",
 *   handler: "orderFlow",
 *   timeout: Duration.minutes(2),
 *   retentionDays: 90,
 * });
 * orders.alarms.addAlarmAction(new SnsAction(topic));
 * // Another workflow on the same journal table, bucket and webhook secret:
 * new DurableFunction(stack, "Refunds", { entry: "functions/refund-flow.ts", handler: "refundFlow", engine: orders.engine });
 * ```
 */
export class DurableFunction extends Construct {
  /** The journal table, payload bucket, retention and webhook secret this function runs on (its own, or shared). */
  readonly engine: DurableEngine;
  /** The engine's journal table. */
  readonly table: dynamodb.TableV2;
  /** The engine's bucket for values stored by reference; undefined with `payloads: false`. */
  readonly payloadBucket: s3.Bucket | undefined;
  readonly queue: sqs.Queue;
  readonly deadLetterQueue: sqs.Queue;
  readonly function: NodejsFunction;
  readonly role: iam.Role;
  readonly logGroup: logs.LogGroup;
  readonly scheduleGroup: scheduler.ScheduleGroup;
  readonly schedulerRole: iam.Role;
  readonly watchdog: Watchdog;
  readonly functionUrl: lambda.FunctionUrl | undefined;
  /** The engine's webhook secret, which this function reads; undefined with `webhook: false`. `grantRead` it to whoever signs requests. */
  readonly webhookSecret: WebhookSecret | undefined;
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
  /** `step.transact`'s grant on the user's tables (one statement, a resource per table). */
  private transactTables: iam.PolicyStatement | undefined;

  constructor(scope: Construct, id: string, props: DurableFunctionProps) {
    super(scope, id);
    const stack = Stack.of(this);
    const timeout = props.timeout ?? Duration.minutes(1);
    check(timeout.toSeconds() >= 1 && timeout.toSeconds() <= 900, `timeout must be 1 s to 15 minutes (Lambda's limit), got ${timeout.toHumanString()}`);
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;
    const batchSize = props.batchSize ?? 10;
    check(Number.isInteger(batchSize) && batchSize >= 1 && batchSize <= 10, `batchSize must be 1-10, got ${batchSize}`);
    if (props.publicUrl !== undefined && !Token.isUnresolved(props.publicUrl)) {
      check(/^https:\/\/[^\s/]+/.test(props.publicUrl), `publicUrl must be an https URL, got "${props.publicUrl}"`);
    }
    const alarmSet = props.alarms ?? "minimal";
    check(ALARM_SETS.includes(alarmSet), `alarms must be one of ${ALARM_SETS.join(", ")}, got "${String(alarmSet)}"`);
    check(props.oldestWakeAlarmAge === undefined || alarmSet === "full", `oldestWakeAlarmAge sets the oldest-wake alarm, which only alarms: "full" creates`);
    const webhook = props.webhook !== false;

    this.engine = props.engine ?? DurableEngine._ownedBy(this, engineSettings(props));
    props.engine?._checkSettings(props);
    this.table = this.engine.table;
    this.payloadBucket = this.engine.payloadBucket;
    this.webhookSecret = webhook ? this.engine.webhookSecret : undefined;
    const queues = new WakeQueues(this, "Wakes", { functionTimeout: timeout, maxReceiveCount: props.maxReceiveCount ?? 10 });
    this.queue = queues.queue;
    this.deadLetterQueue = queues.deadLetterQueue;

    // Wake schedules belong to the deployment: they go with it.
    // Named here (unique per stack and path) so the policy's schedule ARN is known when acknowledged below.
    const scheduleGroupName = Names.uniqueResourceName(this, { maxLength: 56, separator: "-" }) + "-wakes";
    this.scheduleGroup = new scheduler.ScheduleGroup(this, "WakeSchedules", { scheduleGroupName, removalPolicy: RemovalPolicy.DESTROY });
    this.schedulerRole = schedulerDeliveryRole(this, "SchedulerRole", this.scheduleGroup, this.queue, this.deadLetterQueue);

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
      webhookSecret: this.webhookSecret,
      payloadBucket: this.payloadBucket,
    })) {
      this.role.addToPrincipalPolicy(statement);
    }

    const bundling = durableBundling({
      ...props.bundling,
      // Code this function never runs is left out of its bundle (see lib/aws/lambda.ts and runtime.ts).
      define: { ...trimDefines({ webhook, tracing: props.tracing === true }), ...props.bundling?.define },
    });
    if (props.tracing) checkTracingPackage(bundling);
    this.function = new NodejsFunction(this, "Function", {
      description: "Waymark durable function: wakes from SQS, the webhook, the watchdog, retention",
      entry: props.entry,
      handler: props.handler ?? "handler",
      runtime: DEFAULT_RUNTIME,
      architecture: lambda.Architecture.ARM_64,
      memorySize: props.memorySize ?? 1024,
      timeout,
      role: this.role,
      logGroup: this.logGroup,
      bundling,
      environment: {
        ...this.runtimeEnvironment(timeout, webhook, props),
        NODE_OPTIONS: SOURCE_MAP_NODE_OPTIONS,
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

    const watchdogInterval = props.watchdogInterval ?? Duration.minutes(5);
    this.watchdog = new Watchdog(this, "Watchdog", { fn: this.function, interval: watchdogInterval });
    this.engine._join({ fn: this.function, role: this.role, watchdogInterval, webhook });

    if (webhook) {
      // No IAM auth: browsers and mail links cannot sign SigV4. Every route authenticates
      // itself — system calls carry an HMAC signature under the webhook secret, approval links
      // a capability token — and refuses anything else before writing.
      this.functionUrl = this.function.addFunctionUrl({ authType: lambda.FunctionUrlAuthType.NONE });
      new CfnOutput(this, "WebhookUrl", { description: "The webhook (Function URL): signed routes and approval links", value: this.functionUrl.url });
    }
    new CfnOutput(this, "FunctionName", { description: "Invoke with {\"waymark\":\"start\",\"runId\":…,\"input\":…} to start a run", value: this.function.functionName });
    new CfnOutput(this, "LogGroupName", { description: "The function's logs: one JSON line per step and wake", value: this.logGroup.logGroupName });
    new CfnOutput(this, "DeadLetterQueueUrl", { description: "Wakes that could not be delivered or processed", value: this.deadLetterQueue.queueUrl });
    new CfnOutput(this, "WakeQueueUrl", { description: "The wake queue (`waymark runs … --queue`)", value: this.queue.queueUrl });

    this.alarms = new DurableAlarms(this, "Alarms", {
      set: alarmSet,
      fn: this.function,
      queue: this.queue,
      deadLetterQueue: this.deadLetterQueue,
      oldestWakeAge: props.oldestWakeAlarmAge ?? Duration.seconds(SQS_MAX_DELAY_SECONDS + failoverTimings(timeout.toSeconds()).visibilityTimeoutSeconds + 300),
      actions: props.alarmActions ?? [],
    });
    acknowledgeFunctionFindings(this, scheduleGroupName, props.functionProps?.runtime === undefined);
  }

  /** The engine's retention (the stream's mapping runs on the engine's first function). */
  get retention(): Retention {
    const retention = this.engine.retention;
    if (!retention) throw new Error("DurableFunction: the engine has no retention yet"); // set when its first function joins: never seen after construction
    return retention;
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

  /**
   * Lets the workflows' `step.transact` write `table`: `TransactWriteItems` is authorised item by
   * item (there is no `dynamodb:TransactWriteItems` action), so this grants `PutItem`,
   * `UpdateItem`, `DeleteItem` and `ConditionCheckItem` on the table. The transaction's journal
   * record is covered by the function's journal grant. The table must be in this stack's account
   * and Region (a transaction spans one of each). Reads in the body are yours to grant
   * (`table.grantReadData(fn.function)`).
   *
   * @example
   * ```ts
   * const stock = new dynamodb.TableV2(this, "Stock", { partitionKey: { name: "sku", type: dynamodb.AttributeType.STRING } });
   * const orders = new DurableFunction(this, "Orders", { entry: "functions/order-flow.ts", handler: "orderFlow" });
   * orders.grantTransact(stock);
   * orders.function.addEnvironment("STOCK_TABLE", stock.tableName);
   * ```
   */
  grantTransact(table: dynamodb.ITableV2 | dynamodb.ITable): void {
    check(table.tableArn !== this.table.tableArn, "grantTransact is for your own tables: step.transact never writes the journal table");
    if (!this.transactTables) {
      this.transactTables = new iam.PolicyStatement({ sid: "TransactUserTables", actions: ["dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:ConditionCheckItem"] });
      this.role.addToPrincipalPolicy(this.transactTables);
    }
    this.transactTables.addResources(table.tableArn);
  }

  /** The environment `configFromEnv` (lib/aws/config.ts) reads. */
  private runtimeEnvironment(timeout: Duration, webhook: boolean, props: DurableFunctionProps): Record<string, string> {
    const { [ENV.tableName]: table, ...engine } = this.engine.environment(webhook);
    const env: Record<string, string> = {
      [ENV.tableName]: table ?? "",
      [ENV.queueUrl]: this.queue.queueUrl,
      [ENV.queueArn]: this.queue.queueArn,
      [ENV.scheduleGroup]: this.scheduleGroup.scheduleGroupName,
      [ENV.schedulerRoleArn]: this.schedulerRole.roleArn,
      [ENV.schedulerDeadLetterArn]: this.deadLetterQueue.queueArn,
      // With the queue's visibility timeout (wake-queues.ts), what bounds a crashed invocation's wait.
      [ENV.leaseTtlMs]: String(failoverTimings(timeout.toSeconds()).leaseTtlMs),
      ...engine,
    };
    if (props.maxInvocationsPerRun !== undefined) env[ENV.maxInvocations] = String(props.maxInvocationsPerRun);
    if (props.publicUrl !== undefined) env[ENV.publicUrl] = props.publicUrl;
    if (props.payloadInlineBytes !== undefined) env[ENV.payloadInlineBytes] = String(props.payloadInlineBytes);
    if (props.payloadMaxBytes !== undefined) env[ENV.payloadMaxBytes] = String(props.payloadMaxBytes);
    return env;
  }
}

function check(ok: boolean, message: string): asserts ok {
  if (!ok) throw new Error(`DurableFunction: ${message}`);
}
