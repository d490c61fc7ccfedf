/**
 * `DurableFunction` with its defaults: every resource it creates and every setting that matters,
 * asserted on the synthesized template (one synth for the file, without bundling). Nothing in it
 * bills at rest but one alarm (see docs/guides/operations.md, "What it costs at rest").
 */
import { Match } from "aws-cdk-lib/assertions";
import { describe, expect, it } from "vitest";
import { DIMENSION, ENV, JOURNAL_TABLE, METRIC, METRICS_NAMESPACE, configFromEnv, journalTableInput, webhookSecretSource } from "waymark/aws";
import { REGION, synthDurable } from "./stack.ts";

const { template, durable, ref, id } = synthDurable();
const resources = template.toJSON().Resources as Record<string, { Type: string; Properties: Record<string, unknown>; DeletionPolicy?: string }>;
const props = (construct: Parameters<typeof id>[0]) => resources[id(construct)]?.Properties ?? {};

describe("DurableFunction: the resources", () => {
  it("creates exactly these resources and nothing else", () => {
    const counts: Record<string, number> = {};
    for (const r of Object.values(resources)) counts[r.Type] = (counts[r.Type] ?? 0) + 1;
    expect(counts).toEqual({
      "AWS::DynamoDB::GlobalTable": 1, // the journal
      "AWS::SQS::Queue": 3, // wakes + DLQ + retention failures
      "AWS::SQS::QueuePolicy": 3, // TLS only
      "AWS::Scheduler::ScheduleGroup": 1, // the wake schedules
      "AWS::Scheduler::Schedule": 1, // the watchdog
      "AWS::IAM::Role": 3, // the function, Scheduler's wake delivery, the watchdog
      "AWS::IAM::Policy": 3,
      "AWS::Logs::LogGroup": 1,
      "AWS::Lambda::Function": 1,
      "AWS::Lambda::EventSourceMapping": 2, // the wake queue, the journal's stream (retention)
      "AWS::Lambda::Url": 1,
      "AWS::Lambda::Permission": 2, // the Function URL: InvokeFunctionUrl + InvokeFunction
      "AWS::CloudWatch::Alarm": 1, // wakes in the dead-letter queue
      "AWS::S3::Bucket": 1, // payloads by reference
      "AWS::S3::BucketPolicy": 1, // TLS only
    });
  });

  it("keeps the logical ids of what it made before engines and the SSM secret, so an upgrade replaces no table, queue or log group", () => {
    // The ids of the stack as it was (one engine per function, made inside it): a changed id is
    // a new resource to CloudFormation, and a retained table left behind with every run in it.
    expect({
      table: id(durable.table),
      bucket: id(durable.payloadBucket ?? { node: {} }),
      queue: id(durable.queue),
      deadLetters: id(durable.deadLetterQueue),
      schedules: id(durable.scheduleGroup),
      logs: id(durable.logGroup),
      fn: id(durable.function),
      failures: id(durable.retention.failureQueue),
    }).toEqual({
      table: "OrdersJournal7B3DE26D",
      bucket: "OrdersPayloads317B526F",
      queue: "OrdersWakesQueueC0D4DD0A",
      deadLetters: "OrdersWakesDeadLettersDF85A733",
      schedules: "OrdersWakeSchedules565A072D",
      logs: "OrdersLogs63C9E25A",
      fn: "OrdersFunction520DBA95",
      failures: "OrdersRetentionFailures8F5E7BE5",
    });
  });
});

describe("the journal table", () => {
  const table = resources[id(durable.table)];
  const input = journalTableInput("journal");

  it("has the keys and both indexes of JOURNAL_TABLE, the same as the CreateTable input the tests use", () => {
    expect(table?.Properties.KeySchema).toEqual(input.KeySchema);
    expect(new Set(table?.Properties.AttributeDefinitions as unknown[])).toEqual(new Set(input.AttributeDefinitions));
    expect(table?.Properties.GlobalSecondaryIndexes).toEqual(input.GlobalSecondaryIndexes);
    expect((table?.Properties.GlobalSecondaryIndexes as Array<{ IndexName: string }>).map((i) => i.IndexName)).toEqual(JOURNAL_TABLE.indexes.map((i) => i.indexName));
  });

  it("is on-demand, with TTL on the finished-run attribute", () => {
    expect(table?.Properties).toMatchObject({ BillingMode: "PAY_PER_REQUEST", TimeToLiveSpecification: { AttributeName: JOURNAL_TABLE.ttlAttribute, Enabled: true } });
  });

  it("has point-in-time recovery and deletion protection, and is retained with the stack's deletion", () => {
    expect(table?.Properties.Replicas).toEqual([
      expect.objectContaining({ Region: REGION, DeletionProtectionEnabled: true, PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true } }),
    ]);
    template.hasResource("AWS::DynamoDB::GlobalTable", { DeletionPolicy: "Retain", UpdateReplacePolicy: "Retain" });
  });
});

describe("the wake queue and its DLQ", () => {
  it("wake queue: visibility the function timeout + the lease TTL + 15 s start-up slack, 1 MiB messages, SSE, redrive to the DLQ", () => {
    expect(props(durable.queue)).toEqual({
      VisibilityTimeout: 60 + 10 + 15,
      MaximumMessageSize: 1_048_576,
      SqsManagedSseEnabled: true,
      MessageRetentionPeriod: 14 * 86_400,
      RedrivePolicy: { deadLetterTargetArn: ref(durable.deadLetterQueue.queueArn), maxReceiveCount: 10 },
    });
  });

  it("DLQ: 1 MiB, SSE, kept for 14 days", () => {
    expect(props(durable.deadLetterQueue)).toEqual({ MaximumMessageSize: 1_048_576, SqsManagedSseEnabled: true, MessageRetentionPeriod: 14 * 86_400 });
  });

  it("both refuse requests without TLS", () => {
    for (const queue of [durable.queue, durable.deadLetterQueue]) {
      template.hasResourceProperties("AWS::SQS::QueuePolicy", {
        Queues: [ref(queue.queueUrl)],
        PolicyDocument: { Statement: [Match.objectLike({ Effect: "Deny", Action: "sqs:*", Condition: { Bool: { "aws:SecureTransport": "false" } } })] },
      });
    }
  });
});

describe("the function", () => {
  const fn = props(durable.function);

  it("is nodejs24.x on arm64, with the workflow export as its handler, its own role and log group", () => {
    expect(fn).toMatchObject({
      Runtime: "nodejs24.x",
      Architectures: ["arm64"],
      Handler: "index.orderFlow",
      MemorySize: 1024,
      Timeout: 60,
      Role: ref(durable.role.roleArn),
      LoggingConfig: { LogGroup: ref(durable.logGroup.logGroupName) },
    });
    template.hasResource("AWS::Logs::LogGroup", { Properties: { RetentionInDays: 30 }, DeletionPolicy: "Retain" });
  });

  it("allows recursive loops: a checkpointing run re-invokes itself through SQS", () => {
    expect(fn.RecursiveLoop).toBe("Allow");
  });

  it("gets exactly the environment config.ts reads, wired to this construct's resources", () => {
    expect((fn.Environment as { Variables: unknown }).Variables).toEqual({
      [ENV.tableName]: ref(durable.table.tableName),
      [ENV.queueUrl]: ref(durable.queue.queueUrl),
      [ENV.queueArn]: ref(durable.queue.queueArn),
      [ENV.scheduleGroup]: durable.scheduleGroup.scheduleGroupName,
      [ENV.schedulerRoleArn]: ref(durable.schedulerRole.roleArn),
      [ENV.schedulerDeadLetterArn]: ref(durable.deadLetterQueue.queueArn),
      [ENV.retentionDays]: "30",
      [ENV.leaseTtlMs]: "10000", // a sixth of the 1-minute timeout, at least 5 s (failoverTimings)
      [ENV.webhookSecretParameter]: durable.webhookSecret?.parameterName,
      [ENV.webhookSecretCreate]: "true",
      [ENV.payloadBucket]: ref(durable.payloadBucket?.bucketName ?? ""),
      NODE_OPTIONS: "--enable-source-maps",
    });
    // Alone on its table: no watchdog filter.
    expect(Object.keys((fn.Environment as { Variables: object }).Variables)).not.toContain(ENV.watchdogHostedOnly);
  });

  it("that environment is one configFromEnv accepts (tokens stood in for by their names)", () => {
    const vars = (fn.Environment as { Variables: Record<string, unknown> }).Variables;
    const env = Object.fromEntries(Object.entries(vars).map(([k, v]) => [k, typeof v === "string" ? v : `deployed:${JSON.stringify(v)}`]));
    expect(configFromEnv(env)).toMatchObject({ retentionDays: 30, leaseTtlMs: 10_000, scheduleGroup: durable.scheduleGroup.scheduleGroupName });
    // The runtime reads the secret from the parameter, and creates it on its first read.
    expect(webhookSecretSource(configFromEnv(env))).toEqual({ kind: "ssm", name: durable.webhookSecret?.parameterName, create: true });
    expect(Object.keys(vars).filter((k) => k !== "NODE_OPTIONS").every((k) => (Object.values(ENV) as string[]).includes(k))).toBe(true);
  });

  it("has no WAYMARK_PUBLIC_URL by default: the Function URL in its own environment would be a cycle", () => {
    expect(Object.keys((fn.Environment as { Variables: object }).Variables)).not.toContain(ENV.publicUrl);
  });

  it("consumes the wake queue with partial batch failures, 10 per batch, at most 10 at once", () => {
    const [mapping, ...more] = Object.values(template.findResources("AWS::Lambda::EventSourceMapping", { Properties: { EventSourceArn: ref(durable.queue.queueArn) } }));
    expect(more).toEqual([]);
    expect(mapping?.Properties).toEqual({
      EventSourceArn: ref(durable.queue.queueArn),
      FunctionName: ref(durable.function.functionName),
      BatchSize: 10,
      FunctionResponseTypes: ["ReportBatchItemFailures"],
      ScalingConfig: { MaximumConcurrency: 10 },
    });
  });
});

describe("wake schedules and the watchdog", () => {
  it("a schedule group for the wakes, deleted with the stack (its schedules wake this deployment only)", () => {
    template.hasResource("AWS::Scheduler::ScheduleGroup", { Properties: { Name: durable.scheduleGroup.scheduleGroupName }, DeletionPolicy: "Delete" });
    expect(durable.scheduleGroup.scheduleGroupName).toMatch(/^[0-9a-zA-Z_.-]{1,64}$/);
  });

  it("the watchdog: every 5 minutes, Scheduler invokes the function with {\"waymark\":\"watchdog\"}, no retries", () => {
    expect(props(durable.watchdog.schedule)).toEqual({
      Description: expect.any(String),
      ScheduleExpression: "rate(5 minutes)",
      ScheduleExpressionTimezone: "Etc/UTC",
      FlexibleTimeWindow: { Mode: "OFF" },
      State: "ENABLED",
      Target: {
        Arn: ref(durable.function.functionArn),
        RoleArn: ref(durable.watchdog.role.roleArn),
        Input: JSON.stringify({ waymark: "watchdog" }),
        RetryPolicy: { MaximumRetryAttempts: 0 },
      },
    });
  });
});

describe("the webhook", () => {
  it("a Function URL without IAM auth (requests are HMAC-signed or carry capability tokens), its URL a stack output", () => {
    expect(props(durable.functionUrl as never)).toEqual({ AuthType: "NONE", TargetFunctionArn: ref(durable.function.functionArn) });
    template.hasResourceProperties("AWS::Lambda::Permission", { Action: "lambda:InvokeFunctionUrl", FunctionUrlAuthType: "NONE", Principal: "*" });
    template.hasResourceProperties("AWS::Lambda::Permission", { Action: "lambda:InvokeFunction", InvokedViaFunctionUrl: true, Principal: "*" });
    template.hasOutput("*", { Value: ref(durable.functionUrl?.url ?? "") });
  });

  it("the secret: an SSM SecureString parameter named for this stack and construct, not a resource of the stack (nothing of it in the template but its name)", () => {
    // CloudFormation cannot create a SecureString, and a generated value must not pass through a
    // template: the function creates it on its first read (test/aws/webhook-secret.test.ts).
    template.resourceCountIs("AWS::SSM::Parameter", 0);
    template.resourceCountIs("AWS::SecretsManager::Secret", 0);
    expect(durable.webhookSecret).toMatchObject({ parameterName: "/waymark/Test-Orders-C225794E/webhook-secret", generated: true, secret: undefined });
    expect(ref(durable.webhookSecret?.parameterArn ?? "")).toEqual({
      "Fn::Join": ["", ["arn:", { Ref: "AWS::Partition" }, `:ssm:${REGION}:123456789012:parameter/waymark/Test-Orders-C225794E/webhook-secret`]],
    });
    template.hasOutput("*", { Value: durable.webhookSecret?.parameterName });
  });

  it("outputs what the deploy guide uses: function name, table, log group, DLQ, wake queue", () => {
    for (const token of [durable.function.functionName, durable.table.tableName, durable.logGroup.logGroupName, durable.deadLetterQueue.queueUrl, durable.queue.queueUrl]) {
      template.hasOutput("*", { Value: ref(token) });
    }
  });
});

describe("the alarms", () => {
  const full = synthDurable({ alarms: "full" });
  /** The properties of an alarm of a synthesized stack (it must exist). */
  const alarm = (t: ReturnType<typeof synthDurable>, construct: { node: { defaultChild?: unknown } } | undefined) => {
    if (!construct) throw new Error("no such alarm");
    return (t.template.toJSON().Resources as typeof resources)[t.id(construct)]?.Properties ?? {};
  };
  const base = { template, durable, ref, id } as ReturnType<typeof synthDurable>;

  it("by default one alarm, $0.10 a month: wakes in the dead-letter queue (a run is stuck)", () => {
    expect(durable.alarms.all).toEqual([durable.alarms.deadLetters]);
    expect([durable.alarms.oldestWake, durable.alarms.errors, durable.alarms.outOfBudget, durable.retention.failures]).toEqual([undefined, undefined, undefined, undefined]);
    template.resourceCountIs("AWS::CloudWatch::CompositeAlarm", 0);
    expect(alarm(base, durable.alarms.deadLetters)).toMatchObject({
      Namespace: "AWS/SQS",
      MetricName: "ApproximateNumberOfMessagesVisible",
      Dimensions: [{ Name: "QueueName", Value: ref(durable.deadLetterQueue.queueName) }],
      Statistic: "Maximum",
      ComparisonOperator: "GreaterThanOrEqualToThreshold",
      Threshold: 1,
      TreatMissingData: "notBreaching",
    });
  });

  it('alarms: "full" — five: the DLQ, the oldest wake, function errors, runs out of budget, retention failures', () => {
    full.template.resourceCountIs("AWS::CloudWatch::Alarm", 5);
    expect(full.durable.alarms.all).toHaveLength(4);
    expect(full.durable.retention.failures).toBeDefined();
  });

  it("oldest wake message: older than SQS's longest delay + the visibility timeout + 5 minutes", () => {
    expect(alarm(full, full.durable.alarms.oldestWake)).toMatchObject({
      Namespace: "AWS/SQS",
      MetricName: "ApproximateAgeOfOldestMessage",
      Dimensions: [{ Name: "QueueName", Value: full.ref(full.durable.queue.queueName) }],
      Statistic: "Maximum",
      Threshold: 900 + 85 + 300,
    });
  });

  it("function errors: any failed invocation", () => {
    expect(alarm(full, full.durable.alarms.errors)).toMatchObject({
      Namespace: "AWS/Lambda",
      MetricName: "Errors",
      Dimensions: [{ Name: "FunctionName", Value: full.ref(full.durable.function.functionName) }],
      Statistic: "Sum",
      Threshold: 1,
    });
  });

  it("runs out of budget: any run that failed on its invocation budget, from the runtime's EMF metric", () => {
    expect(alarm(full, full.durable.alarms.outOfBudget)).toMatchObject({
      Namespace: METRICS_NAMESPACE,
      MetricName: METRIC.outOfBudget,
      // The dimension the runtime writes: the function's name (AWS_LAMBDA_FUNCTION_NAME).
      Dimensions: [{ Name: DIMENSION.functionName, Value: full.ref(full.durable.function.functionName) }],
      Statistic: "Sum",
      Period: 300,
      ComparisonOperator: "GreaterThanOrEqualToThreshold",
      Threshold: 1,
      TreatMissingData: "notBreaching",
    });
  });

  it('alarms: "none" — no alarm at all', () => {
    const none = synthDurable({ alarms: "none" });
    none.template.resourceCountIs("AWS::CloudWatch::Alarm", 0);
    expect(none.durable.alarms.all).toEqual([]);
  });
});
