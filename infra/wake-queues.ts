/**
 * The wake queue and its dead-letter queue. A standard queue: FIFO queues have no per-message
 * delay, and duplicate wakes are harmless (write-once records).
 */
import { Duration } from "aws-cdk-lib";
import * as sqs from "aws-cdk-lib/aws-sqs";
import { Construct } from "constructs";
import { failoverTimings } from "waymark/aws";

/** SQS's largest message (1 MiB); the default is 256 KiB. */
export const MAX_MESSAGE_BYTES = 1_048_576;

/**
 * `WakeQueues`' props: the consuming function's timeout and the receives before the dead-letter
 * queue.
 */
export interface WakeQueuesProps {
  /** The consuming function's timeout: the visibility timeout is derived from it (`failoverTimings`). */
  functionTimeout: Duration;
  /** Receives of one wake before it is moved to the dead-letter queue. */
  maxReceiveCount: number;
}

/**
 * The wake queue (encrypted, TLS only, 1 MiB messages) with a redrive policy to a DLQ that keeps
 * messages for the longest SQS allows. The DLQ also takes the wakes EventBridge Scheduler could
 * not deliver, so one alarm covers both.
 *
 * @example
 * ```ts
 * const { queue, deadLetterQueue } = new WakeQueues(this, "Wakes", { functionTimeout: Duration.minutes(1), maxReceiveCount: 10 });
 * ```
 */
export class WakeQueues extends Construct {
  readonly queue: sqs.Queue;
  readonly deadLetterQueue: sqs.Queue;

  constructor(scope: Construct, id: string, props: WakeQueuesProps) {
    super(scope, id);
    // The timeout + the lease TTL + start-up slack, not AWS's generic 6× the timeout: a wake
    // stays hidden while its invocation can run, and the message of an invocation that crashed
    // reappears as soon as its lease has lapsed, so that the run resumes within this much (the
    // the worst case in docs/guides/failover.md). A wake seen twice is harmless (the lease, write-once records).
    const visibility = Duration.seconds(failoverTimings(props.functionTimeout.toSeconds()).visibilityTimeoutSeconds);
    const common = {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      maxMessageSizeBytes: MAX_MESSAGE_BYTES,
    };
    this.deadLetterQueue = new sqs.Queue(this, "DeadLetters", { ...common, retentionPeriod: Duration.days(14) });
    this.queue = new sqs.Queue(this, "Queue", {
      ...common,
      visibilityTimeout: visibility,
      retentionPeriod: Duration.days(14),
      deadLetterQueue: { queue: this.deadLetterQueue, maxReceiveCount: props.maxReceiveCount },
    });
  }
}
