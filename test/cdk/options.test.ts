/**
 * `DurableFunction`'s options: each one lands where it should, and bad values fail at synth.
 * Each case is a small synth without bundling.
 */
import { Duration, RemovalPolicy } from "aws-cdk-lib";
import * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import { Match } from "aws-cdk-lib/assertions";
import { describe, expect, it } from "vitest";
import { ENV } from "waymark/aws";
import { synthDurable } from "./stack.ts";

const envOf = (t: ReturnType<typeof synthDurable>) => {
  const fn = Object.values(t.template.findResources("AWS::Lambda::Function"))[0];
  return (fn?.Properties as { Environment: { Variables: Record<string, unknown> } }).Environment.Variables;
};

describe("DurableFunction options", () => {
  it("webhook: false — no Function URL, no secret, no permission to read one", () => {
    const t = synthDurable({ webhook: false });
    t.template.resourceCountIs("AWS::Lambda::Url", 0);
    t.template.resourceCountIs("AWS::Lambda::Permission", 0);
    t.template.resourceCountIs("AWS::SecretsManager::Secret", 0);
    expect(Object.keys(envOf(t)).filter((k) => k.startsWith("WAYMARK_WEBHOOK_SECRET"))).toEqual([]);
    expect(JSON.stringify(t.template.findResources("AWS::IAM::Policy"))).not.toMatch(/secretsmanager:|ssm:/);
    expect(t.durable.webhookSecret).toBeUndefined();
    expect(t.durable.functionUrl).toBeUndefined();
    expect(Object.values(t.template.toJSON().Outputs as object).map((o: { Description: string }) => o.Description).join()).not.toContain("webhook");
  });

  it("removalPolicy: DESTROY — the table and logs go with the stack, deletion protection off", () => {
    const t = synthDurable({ removalPolicy: RemovalPolicy.DESTROY });
    t.template.hasResource("AWS::DynamoDB::GlobalTable", { DeletionPolicy: "Delete", Properties: { Replicas: [Match.objectLike({ DeletionProtectionEnabled: false })] } });
    t.template.hasResource("AWS::Logs::LogGroup", { DeletionPolicy: "Delete" });
  });

  it("publicUrl — a custom domain becomes WAYMARK_PUBLIC_URL, so approval links are full URLs", () => {
    expect(envOf(synthDurable({ publicUrl: "https://approvals.example.com" }))[ENV.publicUrl]).toBe("https://approvals.example.com");
    expect(() => synthDurable({ publicUrl: "http://approvals.example.com" })).toThrow(/publicUrl must be an https URL/);
  });

  it("sizes, limits and intervals", () => {
    const topic = { bind: () => ({ alarmActionArn: "arn:aws:sns:eu-west-1:123456789012:ops" }) } satisfies cloudwatch.IAlarmAction;
    const t = synthDurable({
      timeout: Duration.minutes(2),
      memorySize: 512,
      retentionDays: 90,
      maxConcurrency: 50,
      batchSize: 5,
      maxReceiveCount: 3,
      watchdogInterval: Duration.minutes(10),
      maxInvocationsPerRun: 500,
      alarms: "full",
      oldestWakeAlarmAge: Duration.hours(1),
      alarmActions: [topic],
      environment: { LOG_LEVEL: "debug" },
    });
    t.template.hasResourceProperties("AWS::Lambda::Function", { Timeout: 120, MemorySize: 512 });
    // A 2-minute timeout: lease TTL 20 s (a sixth), visibility 120 + 20 + 15 s.
    expect(envOf(t)).toMatchObject({ [ENV.retentionDays]: "90", [ENV.maxInvocations]: "500", [ENV.leaseTtlMs]: "20000", LOG_LEVEL: "debug" });
    t.template.hasResourceProperties("AWS::SQS::Queue", { VisibilityTimeout: 155, RedrivePolicy: { maxReceiveCount: 3 } });
    t.template.hasResourceProperties("AWS::Lambda::EventSourceMapping", { BatchSize: 5, ScalingConfig: { MaximumConcurrency: 50 } });
    t.template.hasResourceProperties("AWS::Scheduler::Schedule", { ScheduleExpression: "rate(10 minutes)" });
    t.template.hasResourceProperties("AWS::CloudWatch::Alarm", { MetricName: "ApproximateAgeOfOldestMessage", Threshold: 3600 });
    const alarms = Object.values(t.template.findResources("AWS::CloudWatch::Alarm"));
    expect(alarms.map((a) => (a.Properties as { AlarmActions?: unknown }).AlarmActions)).toEqual(Array.from({ length: 5 }, () => [topic.bind().alarmActionArn]));
  });

  it("alarmActions go to the one default alarm; alarms.addAlarmAction adds to every alarm of the function", () => {
    const ops = { bind: () => ({ alarmActionArn: "arn:aws:sns:eu-west-1:123456789012:ops" }) } satisfies cloudwatch.IAlarmAction;
    const pager = { bind: () => ({ alarmActionArn: "arn:aws:sns:eu-west-1:123456789012:pager" }) } satisfies cloudwatch.IAlarmAction;
    const t = synthDurable({ alarmActions: [ops] }, { beforeSynth: (_stack, durable) => durable.alarms.addAlarmAction(pager) });
    const alarms = Object.values(t.template.findResources("AWS::CloudWatch::Alarm"));
    expect(alarms.map((a) => (a.Properties as { AlarmActions?: unknown }).AlarmActions)).toEqual([[ops.bind().alarmActionArn, pager.bind().alarmActionArn]]);
  });

  it("escape hatches: bundling and any function property override the defaults", () => {
    const t = synthDurable({ functionProps: { reservedConcurrentExecutions: 20, description: "orders" } });
    t.template.hasResourceProperties("AWS::Lambda::Function", { ReservedConcurrentExecutions: 20, Description: "orders", RecursiveLoop: "Allow" });
  });

  it.each([
    [{ batchSize: 0 }, /batchSize must be 1-10/],
    [{ batchSize: 11 }, /batchSize must be 1-10/],
    [{ retentionDays: 0 }, /retentionDays must be a positive integer/],
    [{ retentionDays: 1.5 }, /retentionDays must be a positive integer/],
    [{ maxConcurrency: 1 }, /maxConcurrency/],
    [{ timeout: Duration.minutes(16) }, /timeout must be 1 s to 15 minutes/],
    [{ oldestWakeAlarmAge: Duration.hours(1) }, /oldestWakeAlarmAge sets the oldest-wake alarm, which only alarms: "full" creates/],
    [{ alarms: "some" as never }, /alarms must be one of minimal, full, none, got "some"/],
  ])("refuses %o", (props, message) => {
    expect(() => synthDurable(props)).toThrow(message);
  });
});
