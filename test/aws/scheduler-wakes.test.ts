/**
 * EventBridge Scheduler has no local peer (nothing on npm emulates it), so this is a contract
 * test against a mocked client (`aws-sdk-client-mock`): it proves only that we call the API the
 * way AWS documents it. It checks the Scheduler contract docs/testing.md names ("Local peers"):
 *
 *   - `at(yyyy-mm-ddThh:mm:ss)` rounded up to the second, no `Z`; `ScheduleExpressionTimezone: "UTC"`
 *   - `FlexibleTimeWindow: { Mode: "OFF" }`, `ActionAfterCompletion: "DELETE"`
 *   - a name matching `[0-9a-zA-Z_.-]{1,64}`, derived from run and step (wake key)
 *   - the queue ARN and the role as target; the run id in `Input` (the wake message)
 *   - a target retry policy and a DLQ
 *   - `ConflictException` treated as success; throttling surfaced (as a retryable error)
 *
 * Item 2 (an in-process stand-in that delivers `Input` to the SQS emulator) belongs to the
 * end-to-end tests of the Lambda entry.
 */
import {
  ConflictException,
  CreateScheduleCommand,
  DeleteScheduleCommand,
  GetScheduleCommand,
  ResourceNotFoundException,
  SchedulerClient,
  ThrottlingException,
  UpdateScheduleCommand,
  ValidationException,
} from "@aws-sdk/client-scheduler";
import { SendMessageCommand, SQSClient } from "@aws-sdk/client-sqs";
import { mockClient } from "aws-sdk-client-mock";
import { beforeEach, describe, expect, it } from "vitest";
import { ScheduleThrottledError } from "../../lib/aws/errors.ts";
import { SchedulerWakes, atExpression, scheduleName } from "../../lib/aws/scheduler-wakes.ts";
import { SqsWakes } from "../../lib/aws/sqs-wakes.ts";
import { parseWakeMessage } from "../../lib/aws/wake-message.ts";
import { AwsWakeQueue } from "../../lib/aws/wakes.ts";
import type { Wake } from "../../lib/ports.ts";

const NAME_RULE = /^[0-9a-zA-Z_.-]{1,64}$/;
const meta = { $metadata: {} };
const config = {
  groupName: "waymark-wakes",
  queueArn: "arn:aws:sqs:eu-west-1:123456789012:waymark-wakes",
  roleArn: "arn:aws:iam::123456789012:role/waymark-scheduler",
  deadLetterArn: "arn:aws:sqs:eu-west-1:123456789012:waymark-wakes-dlq",
};

const client = new SchedulerClient({ region: "eu-west-1" });
const scheduler = mockClient(client);
const wakes = new SchedulerWakes({ client, ...config });

// 2026-03-01T10:20:30.001Z: one millisecond past a second, so it must round up.
const AT = Date.UTC(2026, 2, 1, 10, 20, 30, 1);
const wake: Wake = { runId: "order-8472", reason: "timeout", key: "timeout:approval", at: AT };

beforeEach(() => {
  scheduler.reset();
  scheduler.on(CreateScheduleCommand).resolves({ ScheduleArn: "arn:aws:scheduler:eu-west-1:123456789012:schedule/x/y", ...meta });
});

const created = () => scheduler.commandCalls(CreateScheduleCommand).map((c) => c.args[0].input);

describe("SchedulerWakes (mocked Scheduler client: no local peer exists)", () => {
  it("creates a one-time UTC schedule, rounded up to the second, that sends the wake to the queue and then deletes itself", async () => {
    await wakes.schedule(wake);
    expect(created()).toEqual([
      {
        Name: scheduleName("order-8472", "timeout:approval"),
        GroupName: "waymark-wakes",
        ScheduleExpression: "at(2026-03-01T10:20:31)",
        ScheduleExpressionTimezone: "UTC",
        FlexibleTimeWindow: { Mode: "OFF" },
        ActionAfterCompletion: "DELETE",
        Target: {
          Arn: config.queueArn,
          RoleArn: config.roleArn,
          Input: JSON.stringify({ v: 1, runId: "order-8472", reason: "timeout", key: "timeout:approval", at: AT }),
          RetryPolicy: { MaximumEventAgeInSeconds: 86_400, MaximumRetryAttempts: 185 },
          DeadLetterConfig: { Arn: config.deadLetterArn },
        },
      },
    ]);
    expect(parseWakeMessage(created()[0]?.Target?.Input ?? "")).toEqual(wake);
  });

  it("writes at() without a zone suffix, and keeps a time already on the second", () => {
    expect(atExpression(Date.UTC(2026, 0, 2, 3, 4, 5))).toBe("at(2026-01-02T03:04:05)");
    expect(atExpression(Date.UTC(2026, 0, 2, 3, 4, 5, 999))).toBe("at(2026-01-02T03:04:06)");
    expect(atExpression(Date.UTC(2026, 11, 31, 23, 59, 59, 500))).toBe("at(2027-01-01T00:00:00)");
    expect(atExpression(AT)).not.toMatch(/Z/);
  });

  it("names schedules deterministically from run and key, within Scheduler's name rule", () => {
    const name = scheduleName("order-8472", "timeout:approval");
    expect(name).toMatch(NAME_RULE);
    expect(name).toBe(scheduleName("order-8472", "timeout:approval"));
    expect(name.startsWith("order-8472.timeout_approval.")).toBe(true);
    const others = [
      scheduleName("order-8472", "sleep:cool-off"),
      scheduleName("order-8473", "timeout:approval"),
      scheduleName("order-8472", "timeout_approval"), // would merge with ":" if only replaced
      scheduleName("order-8472.timeout", "approval"),
    ];
    expect(new Set([name, ...others]).size).toBe(5);
    for (const [runId, key] of [
      ["x".repeat(300), "sleep:" + "y".repeat(300)],
      ["注文-8472 ✓", "retry:charge"],
      ["a", "b"],
    ] as const) {
      expect(scheduleName(runId, key)).toMatch(NAME_RULE);
    }
  });

  it("treats ConflictException as already scheduled when the existing schedule fires at the same time", async () => {
    scheduler.on(CreateScheduleCommand).rejects(new ConflictException({ message: "exists", Message: "exists", ...meta }));
    scheduler.on(GetScheduleCommand).resolves({ ScheduleExpression: "at(2026-03-01T10:20:31)", State: "ENABLED", ...meta });
    await expect(wakes.schedule(wake)).resolves.toBeUndefined();
    expect(scheduler.commandCalls(UpdateScheduleCommand)).toHaveLength(0);
  });

  it("moves a same-named schedule left over for another time (a key reused, e.g. retry:charge)", async () => {
    scheduler.on(CreateScheduleCommand).rejects(new ConflictException({ message: "exists", Message: "exists", ...meta }));
    scheduler.on(GetScheduleCommand).resolves({ ScheduleExpression: "at(2026-03-01T09:00:00)", State: "ENABLED", ...meta });
    scheduler.on(UpdateScheduleCommand).resolves({ ScheduleArn: "arn", ...meta });
    await wakes.schedule(wake);
    const update = scheduler.commandCalls(UpdateScheduleCommand)[0]?.args[0].input;
    expect(update).toMatchObject({ Name: created()[0]?.Name, ScheduleExpression: "at(2026-03-01T10:20:31)", State: "ENABLED", ActionAfterCompletion: "DELETE" });
  });

  it("creates again when the conflicting schedule vanished before it could be read", async () => {
    scheduler.on(CreateScheduleCommand).rejectsOnce(new ConflictException({ message: "exists", Message: "exists", ...meta })).resolves({ ScheduleArn: "arn", ...meta });
    scheduler.on(GetScheduleCommand).rejects(new ResourceNotFoundException({ message: "gone", Message: "gone", ...meta }));
    await wakes.schedule(wake);
    expect(created()).toHaveLength(2);
  });

  it("surfaces throttling as a retryable ScheduleThrottledError carrying the SDK error", async () => {
    const throttling = new ThrottlingException({ message: "Rate exceeded", Message: "Rate exceeded", ...meta });
    scheduler.on(CreateScheduleCommand).rejects(throttling);
    const err = await wakes.schedule(wake).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ScheduleThrottledError);
    expect(err).toMatchObject({ name: "ScheduleThrottledError", retryable: true, scheduleName: scheduleName(wake.runId, wake.key), cause: throttling });

    scheduler.on(DeleteScheduleCommand).rejects(throttling);
    await expect(wakes.cancel(wake.runId, wake.key)).rejects.toBeInstanceOf(ScheduleThrottledError);
  });

  it("lets other errors through unchanged", async () => {
    const invalid = new ValidationException({ message: "bad target", Message: "bad target", ...meta });
    scheduler.on(CreateScheduleCommand).rejects(invalid);
    await expect(wakes.schedule(wake)).rejects.toBe(invalid);
  });

  it("cancels by the same name; a schedule that is gone (fired, or never made) is fine", async () => {
    scheduler.on(DeleteScheduleCommand).resolvesOnce(meta).rejects(new ResourceNotFoundException({ message: "gone", Message: "gone", ...meta }));
    await wakes.cancel("order-8472", "timeout:approval");
    await wakes.cancel("order-8472", "timeout:approval");
    const deletes = scheduler.commandCalls(DeleteScheduleCommand).map((c) => c.args[0].input);
    expect(deletes).toEqual([
      { Name: scheduleName("order-8472", "timeout:approval"), GroupName: "waymark-wakes" },
      { Name: scheduleName("order-8472", "timeout:approval"), GroupName: "waymark-wakes" },
    ]);
  });
});

describe("AwsWakeQueue routing (both clients mocked here; SQS itself is tested on its emulator)", () => {
  const sqsClient = new SQSClient({ region: "eu-west-1" });
  const sqs = mockClient(sqsClient);
  const NOW = Date.UTC(2026, 2, 1, 10, 0, 0);
  const queue = new AwsWakeQueue({
    sqs: new SqsWakes({ client: sqsClient, queueUrl: "https://sqs.example/123456789012/waymark-wakes" }),
    scheduler: wakes,
    clock: { now: () => NOW },
  });

  beforeEach(() => {
    sqs.reset();
    sqs.on(SendMessageCommand).resolves({ MessageId: "m-1", ...meta });
  });

  it("sends up to 900 s ahead through SQS, and anything later through Scheduler", async () => {
    await queue.schedule({ runId: "r", reason: "sleep", key: "sleep:a", at: NOW + 900_000 });
    await queue.schedule({ runId: "r", reason: "sleep", key: "sleep:b", at: NOW + 900_001 });
    await queue.schedule({ runId: "r", reason: "sleep", key: "sleep:c", at: NOW + 30 * 86_400_000 });
    expect(sqs.commandCalls(SendMessageCommand).map((c) => c.args[0].input.DelaySeconds)).toEqual([900]);
    expect(created().map((i) => parseWakeMessage(i.Target?.Input ?? "").key)).toEqual(["sleep:b", "sleep:c"]);
    expect(created()[0]?.ScheduleExpression).toBe("at(2026-03-01T10:15:01)");
  });

  it("cancels through Scheduler only (a sent SQS message cannot be recalled)", async () => {
    scheduler.on(DeleteScheduleCommand).resolves(meta);
    await queue.cancel("r", "timeout:approval");
    expect(scheduler.commandCalls(DeleteScheduleCommand)).toHaveLength(1);
    expect(sqs.calls()).toHaveLength(0);
  });
});
