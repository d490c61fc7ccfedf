/**
 * The {@link WakeQueue} on AWS: a wake due within 15 minutes is an SQS message with a delay; a
 * later one is an EventBridge Scheduler schedule that sends the same message at its time.
 *
 * `cancel` can only reach schedules. An SQS message already sent stays; it wakes the run early
 * or needlessly, and the run re-checks its journal and suspends again (harmless by design).
 */
import { systemClock, type Clock, type Wake, type WakeQueue } from "../ports.ts";
import type { SchedulerWakes } from "./scheduler-wakes.ts";
import type { SqsWakes } from "./sqs-wakes.ts";
import { SQS_MAX_DELAY_SECONDS } from "./wake-message.ts";

/**
 * What an `AwsWakeQueue` sends through: SQS for wakes up to 15 minutes out, Scheduler for later
 * ones.
 */
export interface AwsWakeQueueOptions {
  sqs: SqsWakes;
  scheduler: SchedulerWakes;
  clock?: Clock;
}

/**
 * Schedules wakes on SQS (≤ 900 s ahead) or EventBridge Scheduler (further).
 *
 * @example
 * ```ts
 * const wakes = new AwsWakeQueue({
 *   sqs: new SqsWakes({ client: sqsClient, queueUrl }),
 *   scheduler: new SchedulerWakes({ client: schedulerClient, groupName, queueArn, roleArn, deadLetterArn }),
 * });
 * await wakes.schedule({ runId: "order-1", reason: "sleep", key: "sleep:cool-off", at: Date.now() + 600_000 });
 * ```
 */
export class AwsWakeQueue implements WakeQueue {
  private readonly clock: Clock;

  constructor(private readonly o: AwsWakeQueueOptions) {
    this.clock = o.clock ?? systemClock;
  }

  async schedule(wake: Wake): Promise<void> {
    const delayMs = Math.max(0, wake.at - this.clock.now());
    if (delayMs <= SQS_MAX_DELAY_SECONDS * 1000) await this.o.sqs.send(wake, Math.ceil(delayMs / 1000));
    else await this.o.scheduler.schedule(wake);
  }

  async cancel(runId: string, key: string): Promise<void> {
    await this.o.scheduler.cancel(runId, key);
  }
}
