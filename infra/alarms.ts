/**
 * The alarms of a durable function. Each standard alarm bills $0.10 a month whether it ever
 * fires or not (an account's first ten are free), so the default is one: a wake gave up (the DLQ
 * is not empty), the alarm that means a run is stuck. `alarms: "full"` adds wakes not being
 * consumed (the oldest message is too old), the function itself failing, and a run failed on its
 * invocation budget (the runtime's `RunsOutOfBudget` EMF metric). A composite alarm would not
 * save anything: it costs $0.50 a month on top of the alarms it combines.
 */
import { Duration } from "aws-cdk-lib";
import * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import type * as lambda from "aws-cdk-lib/aws-lambda";
import type * as sqs from "aws-cdk-lib/aws-sqs";
import { Construct } from "constructs";
import { DIMENSION, METRIC, METRICS_NAMESPACE } from "waymark/aws";

/**
 * Which alarms a durable function gets: `"minimal"` (one, wakes in the dead-letter queue),
 * `"full"` (also the oldest wake, function errors, runs out of budget, and the engine's
 * retention failures) or `"none"`.
 */
export type AlarmSet = "minimal" | "full" | "none";

/** The alarm sets, for checking a value given at run time. */
export const ALARM_SETS: readonly AlarmSet[] = ["minimal", "full", "none"];

/** `DurableAlarms`' props: which set, what the alarms watch, and their actions. */
export interface DurableAlarmsProps {
  /** Which alarms. @default "minimal" */
  set?: AlarmSet;
  fn: lambda.IFunction;
  queue: sqs.IQueue;
  deadLetterQueue: sqs.IQueue;
  /** Age of the oldest wake message that means the queue is not being drained. */
  oldestWakeAge: Duration;
  /** Where the alarms send (SNS topics, …). */
  actions: readonly cloudwatch.IAlarmAction[];
}

const PERIOD = Duration.minutes(5);

/**
 * Creates the alarms of a set. They have no actions unless given some: `alarms.addAlarmAction(...)`.
 *
 * @example
 * ```ts
 * const alarms = new DurableAlarms(this, "Alarms", { fn, queue, deadLetterQueue, oldestWakeAge: Duration.minutes(30), actions: [], set: "full" });
 * alarms.addAlarmAction(new SnsAction(topic));
 * ```
 */
export class DurableAlarms extends Construct {
  /** A wake was moved to the DLQ (its receives ran out) or Scheduler could not deliver it. Every set but `"none"`. */
  readonly deadLetters: cloudwatch.Alarm | undefined;
  /** The oldest wake waiting in the queue is older than expected. `"full"` only. */
  readonly oldestWake: cloudwatch.Alarm | undefined;
  /** An invocation failed (a wake batch, a webhook request or the watchdog). `"full"` only. */
  readonly errors: cloudwatch.Alarm | undefined;
  /** A run failed on its invocation budget (`maxInvocationsPerRun`): a runaway loop of self-wakes, or a budget too small. `"full"` only. */
  readonly outOfBudget: cloudwatch.Alarm | undefined;
  /** Every alarm created, in this order: dead letters, oldest wake, errors, out of budget. */
  readonly all: readonly cloudwatch.Alarm[];

  constructor(scope: Construct, id: string, props: DurableAlarmsProps) {
    super(scope, id);
    const set = props.set ?? "minimal";
    const common = {
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    };
    if (set === "none") {
      this.deadLetters = this.oldestWake = this.errors = this.outOfBudget = undefined;
      this.all = [];
      return;
    }
    this.deadLetters = new cloudwatch.Alarm(this, "DeadLetters", {
      ...common,
      alarmDescription: "Waymark: wakes are in the dead-letter queue; their runs are stuck until redriven (the watchdog also re-wakes overdue runs)",
      metric: props.deadLetterQueue.metricApproximateNumberOfMessagesVisible({ period: PERIOD, statistic: cloudwatch.Stats.MAXIMUM }),
      threshold: 1,
    });
    if (set === "minimal") {
      this.oldestWake = this.errors = this.outOfBudget = undefined;
      this.all = [this.deadLetters];
      this.addAlarmAction(...props.actions);
      return;
    }
    this.oldestWake = new cloudwatch.Alarm(this, "OldestWake", {
      ...common,
      alarmDescription: `Waymark: a wake has waited in the queue for over ${props.oldestWakeAge.toHumanString()}; the function is not consuming it`,
      metric: props.queue.metricApproximateAgeOfOldestMessage({ period: PERIOD, statistic: cloudwatch.Stats.MAXIMUM }),
      threshold: props.oldestWakeAge.toSeconds(),
    });
    this.errors = new cloudwatch.Alarm(this, "Errors", {
      ...common,
      alarmDescription: "Waymark: the durable function failed an invocation",
      metric: props.fn.metricErrors({ period: PERIOD, statistic: cloudwatch.Stats.SUM }),
      threshold: 1,
    });
    this.outOfBudget = new cloudwatch.Alarm(this, "RunsOutOfBudget", {
      ...common,
      alarmDescription: "Waymark: a run failed because it used up its invocation budget (InvocationBudgetError)",
      metric: new cloudwatch.Metric({
        namespace: METRICS_NAMESPACE,
        metricName: METRIC.outOfBudget,
        dimensionsMap: { [DIMENSION.functionName]: props.fn.functionName },
        period: PERIOD,
        statistic: cloudwatch.Stats.SUM,
      }),
      threshold: 1,
    });
    this.all = [this.deadLetters, this.oldestWake, this.errors, this.outOfBudget];
    this.addAlarmAction(...props.actions);
  }

  /** Adds actions (an SNS topic, …) to every alarm of this function. */
  addAlarmAction(...actions: cloudwatch.IAlarmAction[]): void {
    for (const alarm of this.all) alarm.addAlarmAction(...actions);
  }
}
