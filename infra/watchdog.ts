/**
 * The watchdog: an EventBridge Scheduler rate schedule that invokes the durable function with
 * `{"waymark":"watchdog"}`, so runs whose wake was lost are woken (never stuck silently).
 *
 * Scheduler rather than an EventBridge rule: the wakes already live in Scheduler, its role can be
 * scoped to this one function, and the target's retry policy is explicit.
 */
import { type Duration, Stack } from "aws-cdk-lib";
import * as iam from "aws-cdk-lib/aws-iam";
import type * as lambda from "aws-cdk-lib/aws-lambda";
import * as scheduler from "aws-cdk-lib/aws-scheduler";
import { Construct } from "constructs";
import { SCHEDULER_PRINCIPAL } from "./permissions.ts";

/** What the watchdog sends; `lib/aws/lambda.ts` routes it to `sweepOverdueRuns`. */
export const WATCHDOG_EVENT = { waymark: "watchdog" } as const;

/** `Watchdog`'s props: the function it invokes and how often. */
export interface WatchdogProps {
  fn: lambda.IFunction;
  interval: Duration;
}

/**
 * The watchdog schedule and the role it invokes the function with (that function only). It
 * lives in the account's default schedule group, out of reach of the function's own schedule
 * permissions. A failed sweep is not retried: the next tick is the retry.
 *
 * @example
 * ```ts
 * new Watchdog(this, "Watchdog", { fn, interval: Duration.minutes(5) });
 * ```
 */
export class Watchdog extends Construct {
  readonly schedule: scheduler.Schedule;
  readonly role: iam.Role;

  constructor(scope: Construct, id: string, props: WatchdogProps) {
    super(scope, id);
    const stack = Stack.of(this);
    const defaultGroupArn = stack.formatArn({ service: "scheduler", resource: "schedule-group", resourceName: "default" });
    this.role = new iam.Role(this, "Role", {
      description: "EventBridge Scheduler invokes the Waymark watchdog",
      assumedBy: new iam.ServicePrincipal(SCHEDULER_PRINCIPAL, {
        conditions: { StringEquals: { "aws:SourceAccount": stack.account, "aws:SourceArn": defaultGroupArn } },
      }),
    });
    this.role.addToPrincipalPolicy(new iam.PolicyStatement({ sid: "InvokeWatchdog", actions: ["lambda:InvokeFunction"], resources: [props.fn.functionArn] }));
    const role = this.role;
    this.schedule = new scheduler.Schedule(this, "Schedule", {
      description: "Waymark watchdog: wakes runs whose wake is overdue",
      schedule: scheduler.ScheduleExpression.rate(props.interval),
      target: {
        bind: () => ({
          arn: props.fn.functionArn,
          role,
          input: scheduler.ScheduleTargetInput.fromObject(WATCHDOG_EVENT),
          retryPolicy: { maximumRetryAttempts: 0 },
        }),
      },
    });
  }
}
