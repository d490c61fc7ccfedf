/**
 * Wakes further out than SQS can delay (900 s): an EventBridge Scheduler one-time schedule that
 * sends the wake message to the wake queue at its time, then deletes itself.
 *
 * The schedule's name is derived from run id and wake key only, so scheduling the same wake twice
 * (a retried invocation) meets `ConflictException`: already scheduled. One key can come back with
 * another time, though (`retry:charge` after a second failure), while the fired schedule still
 * awaits its deletion; so on a conflict we read the schedule and move it if its time differs,
 * rather than keep a wake for the wrong time. `cancel` deletes by the same name.
 */
import { createHash } from "node:crypto";
import type { CreateScheduleCommandInput, SchedulerClient } from "@aws-sdk/client-scheduler";
import type { Wake } from "../ports.ts";
import { ScheduleThrottledError, isErrorNamed } from "./errors.ts";
import { schedulerSdk } from "./sdk.ts";
import { formatWakeMessage } from "./wake-message.ts";

/** How Scheduler retries delivering to the queue: its maximum (24 h, 185 attempts), then the DLQ. */
export const DEFAULT_SCHEDULE_RETRY = { maximumEventAgeSeconds: 86_400, maximumRetryAttempts: 185 };

/** Options of `SchedulerWakes`: the client, the schedule group, and where schedules deliver. */
export interface SchedulerWakesOptions {
  /** Default: a client with the SDK's defaults, created (and the SDK loaded) on first use. */
  client?: SchedulerClient;
  /** The schedule group (created by the CDK construct). */
  groupName: string;
  /** The wake queue's ARN: the schedules' target. */
  queueArn: string;
  /** The role Scheduler assumes to send to the queue (`sqs:SendMessage`). */
  roleArn: string;
  /** Where Scheduler puts a wake it could not deliver (a standard queue). */
  deadLetterArn: string;
  retry?: { maximumEventAgeSeconds: number; maximumRetryAttempts: number };
}

/**
 * Creates and deletes one-time wake schedules.
 *
 * @example
 * ```ts
 * const schedulerWakes = new SchedulerWakes({ client: new SchedulerClient({}), groupName: "waymark",
 *   queueArn, roleArn, deadLetterArn });
 * await schedulerWakes.schedule({ runId: "order-1", reason: "timeout", key: "timeout:approval", at: Date.now() + 86_400_000 });
 * await schedulerWakes.cancel("order-1", "timeout:approval");
 * ```
 */
export class SchedulerWakes {
  private client: SchedulerClient | undefined;

  constructor(private readonly o: SchedulerWakesOptions) {
    this.client = o.client;
  }

  /** Schedules the wake at `wake.at` (rounded up to the second); idempotent per run and key. */
  async schedule(wake: Wake): Promise<void> {
    const input = this.createInput(wake);
    const name = input.Name ?? "";
    const { CreateScheduleCommand } = await schedulerSdk();
    const client = await this.sdkClient();
    try {
      await client.send(new CreateScheduleCommand(input));
    } catch (err) {
      if (!isErrorNamed(err, "ConflictException")) throw throttled(err, name);
      await this.reconcile(input).catch((e: unknown) => {
        throw throttled(e, name);
      });
    }
  }

  /** Deletes the wake's schedule, if any (it may have fired, or never existed: both fine). */
  async cancel(runId: string, key: string): Promise<void> {
    const name = scheduleName(runId, key);
    const { DeleteScheduleCommand } = await schedulerSdk();
    const client = await this.sdkClient();
    try {
      await client.send(new DeleteScheduleCommand({ Name: name, GroupName: this.o.groupName }));
    } catch (err) {
      if (!isErrorNamed(err, "ResourceNotFoundException")) throw throttled(err, name);
    }
  }

  /** The `CreateSchedule` request for a wake. */
  createInput(wake: Wake): CreateScheduleCommandInput {
    const retry = this.o.retry ?? DEFAULT_SCHEDULE_RETRY;
    return {
      Name: scheduleName(wake.runId, wake.key),
      GroupName: this.o.groupName,
      ScheduleExpression: atExpression(wake.at),
      ScheduleExpressionTimezone: "UTC",
      FlexibleTimeWindow: { Mode: "OFF" },
      ActionAfterCompletion: "DELETE",
      Target: {
        Arn: this.o.queueArn,
        RoleArn: this.o.roleArn,
        Input: formatWakeMessage(wake),
        RetryPolicy: { MaximumEventAgeInSeconds: retry.maximumEventAgeSeconds, MaximumRetryAttempts: retry.maximumRetryAttempts },
        DeadLetterConfig: { Arn: this.o.deadLetterArn },
      },
    };
  }

  private async sdkClient(): Promise<SchedulerClient> {
    if (!this.client) {
      const { SchedulerClient } = await schedulerSdk();
      this.client = new SchedulerClient({});
    }
    return this.client;
  }

  /** A schedule of this name exists: keep it if it fires when we want, else move it. */
  private async reconcile(input: CreateScheduleCommandInput): Promise<void> {
    const { CreateScheduleCommand, GetScheduleCommand, UpdateScheduleCommand } = await schedulerSdk();
    const client = await this.sdkClient();
    const existing = await client.send(new GetScheduleCommand({ Name: input.Name, GroupName: input.GroupName })).catch((err: unknown) => {
      if (!isErrorNamed(err, "ResourceNotFoundException")) throw err;
      return undefined;
    });
    if (!existing) {
      // Deleted between our create and this read (it fired): create it once more.
      await client.send(new CreateScheduleCommand(input)).catch((err: unknown) => {
        if (!isErrorNamed(err, "ConflictException")) throw err;
      });
      return;
    }
    if (existing.ScheduleExpression === input.ScheduleExpression && existing.State !== "DISABLED") return;
    await client.send(new UpdateScheduleCommand({ ...input, State: "ENABLED" }));
  }
}

/**
 * A schedule name from run id and wake key: readable, within `[0-9a-zA-Z_.-]{1,64}`, and unique
 * (a hash of both always ends it, since replacing other characters with `_` alone could merge
 * two names).
 *
 * @example
 * ```ts
 * scheduleName("order-8472", "timeout:approval"); // "order-8472.timeout_approval.<16 hex>"
 * ```
 */
export function scheduleName(runId: string, key: string): string {
  const hash = createHash("sha256").update(runId).update("\u0000").update(key).digest("hex").slice(0, 16);
  const readable = `${runId}.${key}`.replace(/[^0-9a-zA-Z_.-]/g, "_").slice(0, 64 - hash.length - 1);
  return `${readable}.${hash}`;
}

/**
 * Scheduler's one-time expression for an epoch-ms time, rounded up to the second (never early),
 * in UTC without a zone suffix (the zone goes in `ScheduleExpressionTimezone`).
 *
 * @example
 * ```ts
 * atExpression(Date.UTC(2026, 0, 2, 3, 4, 5, 1)); // "at(2026-01-02T03:04:06)"
 * ```
 */
export function atExpression(epochMs: number): string {
  const seconds = Math.ceil(epochMs / 1000);
  return `at(${new Date(seconds * 1000).toISOString().slice(0, 19)})`;
}

/** Throttling that outlasted the SDK's retries becomes a retryable Waymark error; others pass. */
function throttled(err: unknown, name: string): unknown {
  return isErrorNamed(err, "ThrottlingException") ? new ScheduleThrottledError(name, err) : err;
}
