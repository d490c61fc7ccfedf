/**
 * Retention of every item: the journal table's stream, filtered to TTL deletions of meta items,
 * drives the durable function, which deletes the rest of each expired run
 * (`lib/aws/retention-stream.ts`). TTL deletes the meta item for free; the records cost one
 * write unit per KB each (see docs/guides/operations.md, "Retention").
 *
 * The event source mapping filters before invoking (`REMOVE`, TTL's service identity, `sk =
 * meta`): steps, signals and lease updates never invoke the function, and filtered records are
 * not billed. A failing batch is bisected and retried a bounded number of times; what still
 * fails goes, as its shard position, to a failure queue (alarmed with `alarms: "full"`): nothing
 * is dropped silently, and `purgeExpired` (or a redrive) can finish the job.
 */
import { Duration, Validations } from "aws-cdk-lib";
import * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import type * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import * as iam from "aws-cdk-lib/aws-iam";
import * as lambda from "aws-cdk-lib/aws-lambda";
import { SqsDlq } from "aws-cdk-lib/aws-lambda-event-sources";
import * as sqs from "aws-cdk-lib/aws-sqs";
import { Construct } from "constructs";
import { TTL_PRINCIPAL } from "waymark/aws";

/** What the stream reads: Lambda's poller describes the stream and reads its shards. */
export const STREAM_ACTIONS = ["dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator", "dynamodb:ListStreams"] as const;

/** The only stream records that invoke the function: TTL deleted a run's meta item. */
export const TTL_REMOVE_FILTER = {
  eventName: ["REMOVE"],
  userIdentity: { type: ["Service"], principalId: [TTL_PRINCIPAL] },
  dynamodb: { Keys: { sk: { S: ["meta"] } } },
} as const;

/**
 * `Retention`'s props: the journal table whose stream it reads and the function that deletes
 * expired runs' records.
 */
export interface RetentionProps {
  table: dynamodb.TableV2;
  fn: lambda.IFunction;
  role: iam.IRole;
  /** Attempts per batch before its position goes to the failure queue. @default 10 */
  retryAttempts?: number;
  /** An alarm on the failure queue's first message ($0.10 a month). @default true */
  alarm?: boolean;
  alarmActions?: readonly cloudwatch.IAlarmAction[];
}

/**
 * The stream's event source mapping (filter, bisect, retries, failure queue) and its alarm.
 * The table must have a stream with the old image (`journalTable` sets one).
 *
 * @example
 * ```ts
 * new Retention(this, "Retention", { table, fn, role });
 * ```
 */
export class Retention extends Construct {
  readonly mapping: lambda.EventSourceMapping;
  readonly failureQueue: sqs.Queue;
  /** The failure queue's alarm; undefined with `alarm: false`. */
  readonly failures: cloudwatch.Alarm | undefined;

  constructor(scope: Construct, id: string, props: RetentionProps) {
    super(scope, id);
    const streamArn = props.table.tableStreamArn;
    if (streamArn === undefined) throw new Error("Retention: the journal table has no stream");
    this.failureQueue = new sqs.Queue(this, "Failures", { encryption: sqs.QueueEncryption.SQS_MANAGED, enforceSSL: true, retentionPeriod: Duration.days(14) });
    // Lambda's poller reads the stream with the function's role: this stream only.
    props.role.addToPrincipalPolicy(new iam.PolicyStatement({ sid: "ReadJournalStream", actions: [...STREAM_ACTIONS], resources: [streamArn] }));
    this.mapping = props.fn.addEventSourceMapping("ExpiredRuns", {
      eventSourceArn: streamArn,
      startingPosition: lambda.StartingPosition.TRIM_HORIZON,
      batchSize: 100,
      bisectBatchOnError: true,
      retryAttempts: props.retryAttempts ?? 10,
      // A stream keeps records 24 h: older than that they are gone anyway.
      maxRecordAge: Duration.hours(24),
      reportBatchItemFailures: true,
      filters: [lambda.FilterCriteria.filter(TTL_REMOVE_FILTER)],
      onFailure: new SqsDlq(this.failureQueue),
    });
    // SqsDlq grants the function's role the send; the mapping needs the stream read first.
    this.mapping.node.addDependency(props.role);
    this.failures = props.alarm === false ? undefined : new cloudwatch.Alarm(this, "FailuresAlarm", {
      alarmDescription: "Waymark retention: expired runs whose records could not be deleted (see the failure queue; rerun purgeExpired)",
      metric: this.failureQueue.metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(5), statistic: "Maximum" }),
      threshold: 1,
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    for (const action of props.alarmActions ?? []) this.failures?.addAlarmAction(action);
    Validations.of(this.failureQueue).acknowledge({
      id: "AwsSolutions-SQS3",
      reason: "This queue is itself a dead-letter destination: the stream mapping's on-failure target, holding positions of batches that retention could not process",
    });
  }
}
