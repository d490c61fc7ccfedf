/**
 * Retention in the construct: the journal table streams old images, and only TTL deletions of
 * meta items reach the function (filtered by the event source mapping, so steps, signals and
 * lease updates never invoke it), with bisect, bounded retries, a failure queue (and its alarm
 * with `alarms: "full"`).
 */
import { describe, expect, it } from "vitest";
import { synthDurable } from "./stack.ts";

const { template, durable, ref, id } = synthDurable();
const resources = template.toJSON().Resources as Record<string, { Type: string; Properties: Record<string, unknown> }>;

describe("retention of every item", () => {
  it("the journal table has a stream with the old image (a TTL REMOVE carries the run's id, createdAt and expiresAt)", () => {
    expect(resources[id(durable.table)]?.Properties.StreamSpecification).toEqual({ StreamViewType: "OLD_IMAGE" });
  });

  it("the stream drives the function: TTL REMOVEs of meta items only, bisected, retried 10 times, then to the failure queue", () => {
    const mappings = Object.values(template.findResources("AWS::Lambda::EventSourceMapping", { Properties: { EventSourceArn: ref(durable.table.tableStreamArn ?? "") } }));
    expect(mappings).toHaveLength(1);
    const props = mappings[0]?.Properties as Record<string, unknown>;
    expect(props).toEqual({
      EventSourceArn: ref(durable.table.tableStreamArn ?? ""),
      FunctionName: ref(durable.function.functionName),
      StartingPosition: "TRIM_HORIZON",
      BatchSize: 100,
      BisectBatchOnFunctionError: true,
      MaximumRetryAttempts: 10,
      MaximumRecordAgeInSeconds: 86_400,
      FunctionResponseTypes: ["ReportBatchItemFailures"],
      FilterCriteria: { Filters: [{ Pattern: expect.any(String) }] },
      DestinationConfig: { OnFailure: { Destination: ref(durable.retention.failureQueue.queueArn) } },
    });
    const pattern = JSON.parse((props.FilterCriteria as { Filters: Array<{ Pattern: string }> }).Filters[0]?.Pattern ?? "{}");
    // The identity AWS documents for TTL deletions on a stream.
    expect(pattern).toEqual({
      eventName: ["REMOVE"],
      userIdentity: { type: ["Service"], principalId: ["dynamodb.amazonaws.com"] },
      dynamodb: { Keys: { sk: { S: ["meta"] } } },
    });
  });

  it("the failure queue is encrypted, TLS only, kept 14 days", () => {
    expect(resources[id(durable.retention.failureQueue)]?.Properties).toMatchObject({ SqsManagedSseEnabled: true, MessageRetentionPeriod: 1_209_600 });
    template.hasResourceProperties("AWS::SQS::QueuePolicy", {
      Queues: [ref(durable.retention.failureQueue.queueUrl)],
      PolicyDocument: { Statement: [{ Effect: "Deny", Condition: { Bool: { "aws:SecureTransport": "false" } } }] },
    });
  });

  it('is alarmed on its first message with alarms: "full" only (an alarm bills at rest)', () => {
    expect(durable.retention.failures).toBeUndefined();
    const full = synthDurable({ alarms: "full" });
    const failures = full.durable.retention.failures;
    if (!failures) throw new Error("no retention alarm");
    expect((full.template.toJSON().Resources as typeof resources)[full.id(failures)]?.Properties).toMatchObject({
      MetricName: "ApproximateNumberOfMessagesVisible",
      Dimensions: [{ Name: "QueueName", Value: full.ref(full.durable.retention.failureQueue.queueName) }],
      Threshold: 1,
      ComparisonOperator: "GreaterThanOrEqualToThreshold",
    });
  });
});
