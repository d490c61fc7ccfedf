/**
 * Several functions on one engine: one journal table, payload bucket, retention and webhook
 * secret, and for each function its own wake queue and DLQ, schedule group, Scheduler role,
 * watchdog, role and alarm. Least privilege stays per function: each role reaches the shared
 * table, bucket and parameter, and only its own queue, schedules and roles. Real synth (bundling
 * skipped), both ways of sharing: `engine: orders.engine` and a `DurableEngine` both take.
 */
import { App, type CfnElement, Duration, Stack } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import { AwsSolutionsChecks } from "cdk-nag";
import { describe, expect, it } from "vitest";
import { ENV, configFromEnv } from "waymark/aws";
import { DurableEngine, DurableFunction, type DurableFunctionProps, schedulesInGroup } from "waymark/cdk";
import { ACCOUNT, ENTRY, REGION } from "./stack.ts";

type Statement = { Sid?: string; Effect: string; Action: string | string[]; Resource: unknown };

function synthShared(o: { explicit?: boolean; orders?: Partial<DurableFunctionProps>; refunds?: Partial<DurableFunctionProps> } = {}) {
  const app = new App({ context: { "aws:cdk:bundling-stacks": [] } });
  const stack = new Stack(app, "Shop", { env: { account: ACCOUNT, region: REGION } });
  const engine = o.explicit ? new DurableEngine(stack, "Engine", { retentionDays: 90 }) : undefined;
  const orders = new DurableFunction(stack, "Orders", { entry: ENTRY, handler: "orderFlow", ...(engine ? { engine } : {}), ...o.orders });
  const refunds = new DurableFunction(stack, "Refunds", { entry: ENTRY, handler: "orderFlow", engine: engine ?? orders.engine, ...o.refunds });
  const template = Template.fromStack(stack);
  const resources = template.toJSON().Resources as Record<string, { Type: string; Properties: Record<string, unknown> }>;
  const ref = (token: string) => stack.resolve(token);
  const id = (c: { node: { defaultChild?: unknown } }) => stack.resolve((c.node.defaultChild as CfnElement).logicalId) as string;
  const statements = (fn: DurableFunction): Statement[] =>
    Object.values(resources)
      .filter((r) => r.Type === "AWS::IAM::Policy" && JSON.stringify(r.Properties.Roles) === JSON.stringify([{ Ref: id(fn.role) }]))
      .flatMap((r) => (r.Properties.PolicyDocument as { Statement: Statement[] }).Statement);
  const env = (fn: DurableFunction) => (resources[id(fn.function)]?.Properties.Environment as { Variables: Record<string, unknown> }).Variables;
  return { app, stack, engine, orders, refunds, template, resources, ref, id, statements, env };
}

const shared = synthShared();
const { orders, refunds, template, ref, statements, env } = shared;

describe("engine: orders.engine", () => {
  it("one journal table, bucket, retention and secret; two of everything that routes wakes", () => {
    const counts: Record<string, number> = {};
    for (const r of Object.values(shared.resources)) counts[r.Type] = (counts[r.Type] ?? 0) + 1;
    expect(counts).toMatchObject({
      "AWS::DynamoDB::GlobalTable": 1,
      "AWS::S3::Bucket": 1,
      "AWS::SQS::Queue": 5, // a wake queue and a DLQ each, one retention failure queue
      "AWS::Scheduler::ScheduleGroup": 2,
      "AWS::Scheduler::Schedule": 2, // a watchdog each
      "AWS::Lambda::Function": 2,
      "AWS::Lambda::EventSourceMapping": 3, // a wake queue each, the journal's stream once
      "AWS::CloudWatch::Alarm": 2, // a DLQ alarm each
      "AWS::IAM::Role": 6,
    });
    expect(counts["AWS::SecretsManager::Secret"]).toBeUndefined();
    expect(refunds.engine).toBe(orders.engine);
    expect(refunds.table).toBe(orders.table);
    expect(refunds.queue).not.toBe(orders.queue);
  });

  it("each function's environment names the shared table, bucket and secret, and its own queue, DLQ and schedules", () => {
    const [a, b] = [env(orders), env(refunds)];
    for (const key of [ENV.tableName, ENV.payloadBucket, ENV.webhookSecretParameter, ENV.webhookSecretCreate, ENV.retentionDays]) expect(b[key], key).toEqual(a[key]);
    expect(a[ENV.tableName]).toEqual(ref(orders.table.tableName));
    for (const key of [ENV.queueUrl, ENV.queueArn, ENV.scheduleGroup, ENV.schedulerRoleArn, ENV.schedulerDeadLetterArn]) expect(b[key], key).not.toEqual(a[key]);
    expect(b[ENV.queueUrl]).toEqual(ref(refunds.queue.queueUrl));
    expect(b[ENV.schedulerDeadLetterArn]).toEqual(ref(refunds.deadLetterQueue.queueArn));
  });

  it("every watchdog sweeps only its own workflows; the first also takes runs nobody swept for two intervals and the grace", () => {
    expect(env(orders)[ENV.watchdogHostedOnly]).toBe("true");
    expect(env(refunds)[ENV.watchdogHostedOnly]).toBe("true");
    // 2 × 5 min + 3 min: the slowest member's interval, twice, plus the sweep's grace and a minute.
    expect(env(orders)[ENV.watchdogOrphansAfterMs]).toBe("780000");
    expect(env(refunds)[ENV.watchdogOrphansAfterMs]).toBeUndefined();
    const slower = synthShared({ refunds: { watchdogInterval: Duration.minutes(15) } });
    expect(slower.env(slower.orders)[ENV.watchdogOrphansAfterMs]).toBe(String((2 * 15 + 3) * 60_000));
    // configFromEnv takes both (tokens stood in for by strings).
    const plain = (vars: Record<string, unknown>) => Object.fromEntries(Object.entries(vars).map(([k, v]) => [k, typeof v === "string" ? v : `deployed:${JSON.stringify(v)}`]));
    expect(configFromEnv(plain(env(orders)))).toMatchObject({ watchdogHostedOnly: true, watchdogOrphansAfterMs: 780_000 });
    expect(configFromEnv(plain(env(refunds)))).toMatchObject({ watchdogHostedOnly: true });
  });

  it("least privilege per function: the shared table, bucket and parameter, and only its own queue, schedules and roles", () => {
    for (const [fn, other] of [
      [orders, refunds],
      [refunds, orders],
    ] as const) {
      const mine = statements(fn);
      const bySid = (sid: string) => mine.find((s) => s.Sid === sid)?.Resource;
      expect(bySid("Journal")).toEqual(ref(orders.table.tableArn));
      expect(bySid("SendWakes")).toEqual(ref(fn.queue.queueArn));
      expect(bySid("WakeSchedules")).toEqual(ref(schedulesInGroup(shared.stack, fn.scheduleGroup)));
      expect(bySid("PassSchedulerRole")).toEqual(ref(fn.schedulerRole.roleArn));
      expect(bySid("WebhookSecret")).toEqual(ref(orders.webhookSecret?.parameterArn ?? ""));
      const text = JSON.stringify(mine);
      for (const token of [other.queue.queueArn, other.deadLetterQueue.queueArn, other.schedulerRole.roleArn, other.function.functionArn, other.logGroup.logGroupArn]) {
        expect(text).not.toContain(JSON.stringify(ref(token)));
      }
      expect(text).not.toContain(other.scheduleGroup.scheduleGroupName);
    }
  });

  it("both roles allow the same actions as a function alone; only the first reads the journal's stream (retention)", () => {
    const actions = (fn: DurableFunction) => new Set(statements(fn).flatMap((s) => (Array.isArray(s.Action) ? s.Action : [s.Action])));
    const streamRead = ["dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator", "dynamodb:ListStreams"];
    expect(statements(orders).filter((s) => s.Sid === "ReadJournalStream")).toHaveLength(1);
    expect(statements(refunds).filter((s) => s.Sid === "ReadJournalStream")).toEqual([]);
    expect(JSON.stringify(statements(refunds))).not.toContain(JSON.stringify(ref(orders.retention.failureQueue.queueArn)));
    expect(new Set([...actions(refunds), ...streamRead])).toEqual(actions(orders));
    const mappings = Object.values(template.findResources("AWS::Lambda::EventSourceMapping", { Properties: { EventSourceArn: ref(orders.table.tableStreamArn ?? "") } }));
    expect(mappings.map((m) => (m.Properties as { FunctionName: unknown }).FunctionName)).toEqual([ref(orders.function.functionName)]);
    expect(refunds.retention).toBe(orders.retention);
  });

  it("each Scheduler role delivers to its own function's queue and DLQ only", () => {
    for (const fn of [orders, refunds]) {
      const [policy] = Object.values(shared.resources).filter((r) => r.Type === "AWS::IAM::Policy" && JSON.stringify(r.Properties.Roles) === JSON.stringify([{ Ref: shared.id(fn.schedulerRole) }]));
      expect((policy?.Properties.PolicyDocument as { Statement: Statement[] }).Statement).toEqual([
        { Sid: "DeliverWakes", Effect: "Allow", Action: "sqs:SendMessage", Resource: [ref(fn.queue.queueArn), ref(fn.deadLetterQueue.queueArn)] },
      ]);
    }
  });

  it("outputs the table and the secret once, each function's own URL, name, logs and queues", () => {
    const outputs = Object.values(template.toJSON().Outputs as Record<string, { Value: unknown }>).map((o) => JSON.stringify(o.Value));
    const count = (value: unknown) => outputs.filter((o) => o === JSON.stringify(value)).length;
    expect(count(ref(orders.table.tableName))).toBe(1);
    expect(count(orders.webhookSecret?.parameterName)).toBe(1);
    for (const fn of [orders, refunds]) for (const token of [fn.function.functionName, fn.queue.queueUrl, fn.deadLetterQueue.queueUrl, fn.functionUrl?.url ?? ""]) expect(count(ref(token))).toBe(1);
  });

  it("cdk-nag AwsSolutions finds nothing", () => {
    const report = new AwsSolutionsChecks(shared.app).validateScope(shared.app);
    expect(report.violations.flatMap((v) => v.violatingResources.map((r) => `${v.ruleName} at ${r.constructPath}`))).toEqual([]);
  });

  it("refuses an engine setting that differs from the engine's, with the reason; the same value is fine", () => {
    expect(() => synthShared({ refunds: { retentionDays: 7 } })).toThrow(/retentionDays belongs to the engine it shares \(30 days\)/);
    expect(() => synthShared({ refunds: { payloads: false } })).toThrow(/payloads belongs to the engine it shares/);
    expect(() => synthShared({ refunds: { maxRunDuration: Duration.days(30) } })).toThrow(/maxRunDuration belongs to the engine/);
    expect(() => synthShared({ refunds: { retentionDays: 30, payloads: true } })).not.toThrow();
  });
});

describe("a DurableEngine both functions take", () => {
  const t = synthShared({ explicit: true, orders: { webhook: false } });
  const engine = t.engine as DurableEngine;

  it("its resources live under the engine, its settings reach every function", () => {
    expect(t.id(engine.table)).toMatch(/^EngineJournal/);
    expect(engine.payloadBucket && t.id(engine.payloadBucket)).toMatch(/^EnginePayloads/);
    expect(t.env(t.orders)[ENV.retentionDays]).toBe("90");
    expect(t.env(t.refunds)[ENV.retentionDays]).toBe("90");
    expect(engine.webhookSecret.parameterName).toMatch(/^\/waymark\/Shop-Engine-[0-9A-F]{8}\/webhook-secret$/);
    expect(engine.functions).toEqual([t.orders.function, t.refunds.function]);
  });

  it("retention runs on the first function that joined", () => {
    expect(engine.retention).toBe(t.orders.retention);
    expect(t.statements(t.orders).filter((s) => s.Sid === "ReadJournalStream")).toHaveLength(1);
  });

  it("only a function with a webhook reads the secret", () => {
    expect(JSON.stringify(t.statements(t.orders))).not.toContain("ssm:");
    expect(Object.keys(t.env(t.orders)).filter((k) => k.startsWith("WAYMARK_WEBHOOK_SECRET"))).toEqual([]);
    expect(t.statements(t.refunds).filter((s) => s.Sid === "WebhookSecret")).toEqual([
      { Sid: "WebhookSecret", Effect: "Allow", Action: ["ssm:GetParameter", "ssm:PutParameter"], Resource: t.ref(engine.webhookSecret.parameterArn ?? "") },
    ]);
    t.template.hasOutput("*", { Value: engine.webhookSecret.parameterName });
  });

  it("cdk-nag AwsSolutions finds nothing", () => {
    const report = new AwsSolutionsChecks(t.app).validateScope(t.app);
    expect(report.violations.flatMap((v) => v.violatingResources.map((r) => `${v.ruleName} at ${r.constructPath}`))).toEqual([]);
  });
});
