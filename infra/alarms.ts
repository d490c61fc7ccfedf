/**
 * The alarms a durable function needs: a wake gave up (the DLQ is not empty), wakes are not
 * being consumed (the oldest message is too old), the function itself fails, and a run failed
 * because it used up its invocation budget (the runtime's `RunsOutOfBudget` EMF metric).
 */
import { Duration } from "aws-cdk-lib";
import * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import type * as lambda from "aws-cdk-lib/aws-lambda";
import type * as sqs from "aws-cdk-lib/aws-sqs";
import { Construct } from "constructs";
import { DIMENSION, METRIC, METRICS_NAMESPACE } from "waymark/aws";

export interface DurableAlarmsProps {
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
 * Creates the alarms. They have no actions unless given some: `alarms.deadLetters.addAlarmAction(...)`.
 *
 * @example
 * ```ts
 * const alarms = new DurableAlarms(this, "Alarms", { fn, queue, deadLetterQueue, oldestWakeAge: Duration.minutes(30), actions: [] });
 * ```
 */
export class DurableAlarms extends Construct {
  /** A wake was moved to the DLQ (its receives ran out) or Scheduler could not deliver it. */
  readonly deadLetters: cloudwatch.Alarm;
  /** The oldest wake waiting in the queue is older than expected. */
  readonly oldestWake: cloudwatch.Alarm;
  /** An invocation failed (a wake batch, a webhook request or the watchdog). */
  readonly errors: cloudwatch.Alarm;
  /** A run failed on its invocation budget (`maxInvocationsPerRun`): a runaway loop of self-wakes, or a budget too small. */
  readonly outOfBudget: cloudwatch.Alarm;

  constructor(scope: Construct, id: string, props: DurableAlarmsProps) {
    super(scope, id);
    const common = {
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    };
    this.deadLetters = new cloudwatch.Alarm(this, "DeadLetters", {
      ...common,
      alarmDescription: "Waymark: wakes are in the dead-letter queue; their runs are stuck until redriven (the watchdog also re-wakes overdue runs)",
      metric: props.deadLetterQueue.metricApproximateNumberOfMessagesVisible({ period: PERIOD, statistic: cloudwatch.Stats.MAXIMUM }),
      threshold: 1,
    });
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
    for (const alarm of [this.deadLetters, this.oldestWake, this.errors, this.outOfBudget]) alarm.addAlarmAction(...props.actions);
  }
}
