/**
 * An EventBridge Scheduler stand-in for the end-to-end tests. THIS IS NOT A REAL PEER: Scheduler
 * has no local emulator (see docs/testing.md, "Local peers"), so this object takes its place. Everything else in
 * these tests is real (DynamoDB Local, the SQS emulator, the exported Lambda handler).
 *
 * It takes the same command objects the runtime's `SchedulerWakes` sends through
 * `SchedulerClient.send` (`CreateSchedule`, `GetSchedule`, `UpdateSchedule`, `DeleteSchedule`),
 * and checks each against the contract Waymark relies on, throwing the SDK's own
 * `ValidationException` on any breach:
 *
 *   - name within `[0-9a-zA-Z_.-]{1,64}`, the configured schedule group;
 *   - `ScheduleExpression` exactly `at(yyyy-mm-ddThh:mm:ss)` (no zone suffix, no millis) with
 *     `ScheduleExpressionTimezone: "UTC"`;
 *   - `FlexibleTimeWindow: { Mode: "OFF" }`, `ActionAfterCompletion: "DELETE"`;
 *   - the target is the wake queue's ARN, with a role, a dead-letter queue, a retry policy
 *     within Scheduler's limits (60–86,400 s, 0–185 attempts), and a string `Input`.
 *
 * A second `CreateSchedule` of one name throws `ConflictException`; `Get`/`Update`/`Delete` of a
 * missing one throw `ResourceNotFoundException` — the SDK's error classes, as the client raises.
 * A schedule fires when the harness clock passes its time (`fireDue()`, called by the event
 * source loop on every poll, and after `advance()`): its `Input` is sent to the SQS emulator
 * queue as is, and the schedule deletes itself (ActionAfterCompletion DELETE).
 */
import {
  ConflictException,
  CreateScheduleCommand,
  DeleteScheduleCommand,
  GetScheduleCommand,
  ResourceNotFoundException,
  UpdateScheduleCommand,
  ValidationException,
  type CreateScheduleCommandInput,
  type SchedulerClient,
} from "@aws-sdk/client-scheduler";
import { SendMessageCommand, type SQSClient } from "@aws-sdk/client-sqs";
import type { Clock } from "../../lib/ports.ts";

const NAME = /^[0-9a-zA-Z_.-]{1,64}$/;
const AT = /^at\((\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\)$/;

export interface StoredSchedule {
  input: CreateScheduleCommandInput;
  /** Epoch ms the `at()` expression names (UTC). */
  fireAt: number;
}

export interface SchedulerStandInOptions {
  clock: Clock;
  sqs: SQSClient;
  groupName: string;
  /** The wake queue: the only target accepted, and where `Input` is delivered. */
  queueArn: string;
  queueUrl: string;
}

type Command = CreateScheduleCommand | GetScheduleCommand | UpdateScheduleCommand | DeleteScheduleCommand;

export class SchedulerStandIn {
  readonly schedules = new Map<string, StoredSchedule>();
  /** Every accepted request, in order, for assertions. */
  readonly calls: Array<{ command: "Create" | "Get" | "Update" | "Delete"; name: string; expression?: string }> = [];
  /** Every schedule that fired, with the `Input` delivered. */
  readonly fired: Array<{ name: string; fireAt: number; input: string }> = [];

  constructor(private readonly o: SchedulerStandInOptions) {}

  /** The stand-in where the runtime wants a `SchedulerClient` (it only ever calls `send`). */
  asClient(): SchedulerClient {
    return this as unknown as SchedulerClient;
  }

  async send(command: Command): Promise<unknown> {
    if (command instanceof CreateScheduleCommand) {
      const input = this.validate(command.input);
      const name = input.Name ?? "";
      if (this.schedules.has(name)) throw new ConflictException(problem(`Schedule ${name} already exists.`, 409));
      this.schedules.set(name, { input, fireAt: fireAtOf(input) });
      this.calls.push({ command: "Create", name, expression: input.ScheduleExpression ?? "" });
      return { ScheduleArn: `arn:aws:scheduler:us-east-1:123456789012:schedule/${input.GroupName}/${name}` };
    }
    if (command instanceof UpdateScheduleCommand) {
      const input = this.validate(command.input);
      const name = input.Name ?? "";
      this.existing(name, input.GroupName);
      this.schedules.set(name, { input, fireAt: fireAtOf(input) });
      this.calls.push({ command: "Update", name, expression: input.ScheduleExpression ?? "" });
      return {};
    }
    if (command instanceof GetScheduleCommand) {
      const name = command.input.Name ?? "";
      const found = this.existing(name, command.input.GroupName);
      this.calls.push({ command: "Get", name });
      return { ...found.input, State: "ENABLED" };
    }
    if (command instanceof DeleteScheduleCommand) {
      const name = command.input.Name ?? "";
      this.existing(name, command.input.GroupName);
      this.schedules.delete(name);
      this.calls.push({ command: "Delete", name });
      return {};
    }
    throw invalid(`the stand-in does not take ${(command as object).constructor.name}`);
  }

  /**
   * Delivers every schedule whose time the clock has passed, then deletes it; returns how many
   * fired. `earlyMs` fires that much ahead, as Scheduler may within its minute.
   */
  async fireDue(earlyMs = 0): Promise<number> {
    const now = this.o.clock.now();
    const due = [...this.schedules.entries()].filter(([, s]) => s.fireAt <= now + earlyMs);
    for (const [name, s] of due) {
      const input = s.input.Target?.Input ?? "";
      this.schedules.delete(name);
      await this.o.sqs.send(new SendMessageCommand({ QueueUrl: this.o.queueUrl, MessageBody: input }));
      this.fired.push({ name, fireAt: s.fireAt, input });
    }
    return due.length;
  }

  private existing(name: string, group: string | undefined): StoredSchedule {
    if (group !== this.o.groupName) throw invalid(`GroupName ${String(group)} is not ${this.o.groupName}`);
    const found = this.schedules.get(name);
    if (!found) throw new ResourceNotFoundException(problem(`Schedule ${name} does not exist.`, 404));
    return found;
  }

  private validate(input: CreateScheduleCommandInput): CreateScheduleCommandInput {
    const problems: string[] = [];
    if (!NAME.test(input.Name ?? "")) problems.push(`Name ${JSON.stringify(input.Name)} must match [0-9a-zA-Z_.-]{1,64}`);
    if (input.GroupName !== this.o.groupName) problems.push(`GroupName ${JSON.stringify(input.GroupName)} is not ${this.o.groupName}`);
    const at = AT.exec(input.ScheduleExpression ?? "");
    if (!at || Number.isNaN(Date.parse(`${at[1]}Z`))) problems.push(`ScheduleExpression ${JSON.stringify(input.ScheduleExpression)} is not at(yyyy-mm-ddThh:mm:ss)`);
    if (input.ScheduleExpressionTimezone !== "UTC") problems.push("ScheduleExpressionTimezone must be UTC");
    if (input.FlexibleTimeWindow?.Mode !== "OFF" || input.FlexibleTimeWindow.MaximumWindowInMinutes !== undefined) problems.push("FlexibleTimeWindow must be { Mode: OFF }");
    if (input.ActionAfterCompletion !== "DELETE") problems.push("ActionAfterCompletion must be DELETE");
    if (input.State !== undefined && input.State !== "ENABLED") problems.push(`State ${input.State}: a wake schedule must be ENABLED`);
    const t = input.Target;
    if (t?.Arn !== this.o.queueArn) problems.push(`Target.Arn ${JSON.stringify(t?.Arn)} is not the wake queue ${this.o.queueArn}`);
    if (!t?.RoleArn?.startsWith("arn:")) problems.push("Target.RoleArn is required");
    if (!t?.DeadLetterConfig?.Arn?.startsWith("arn:aws:sqs:")) problems.push("Target.DeadLetterConfig.Arn must be an SQS queue");
    const age = t?.RetryPolicy?.MaximumEventAgeInSeconds;
    const attempts = t?.RetryPolicy?.MaximumRetryAttempts;
    if (age === undefined || age < 60 || age > 86_400) problems.push(`Target.RetryPolicy.MaximumEventAgeInSeconds ${String(age)} outside 60..86400`);
    if (attempts === undefined || attempts < 0 || attempts > 185) problems.push(`Target.RetryPolicy.MaximumRetryAttempts ${String(attempts)} outside 0..185`);
    if (typeof t?.Input !== "string" || t.Input.length === 0) problems.push("Target.Input must be a non-empty string");
    if (problems.length > 0) throw invalid(problems.join("; "));
    return structuredClone(input);
  }
}

function fireAtOf(input: CreateScheduleCommandInput): number {
  const at = AT.exec(input.ScheduleExpression ?? "")?.[1] ?? "";
  return Date.parse(`${at}Z`);
}

/** The options the SDK's service exceptions take, as its deserializer builds them. */
function problem(message: string, httpStatusCode: number) {
  return { message, Message: message, $metadata: { httpStatusCode } };
}

function invalid(message: string): ValidationException {
  return new ValidationException(problem(message, 400));
}
