/**
 * Wakes through SQS: one `SendMessage` to the standard wake queue, delayed by `DelaySeconds`
 * (0–900 s, per message; FIFO queues have no per-message delay).
 *
 * A sent message cannot be cancelled. That is fine: an early or extra wake re-checks the journal
 * and suspends again, and duplicate wakes are harmless by design (write-once records).
 */
import type { SQSClient } from "@aws-sdk/client-sqs";
import type { Wake } from "../ports.ts";
import { sqsSdk } from "./sdk.ts";
import { SQS_MAX_DELAY_SECONDS, formatWakeMessage } from "./wake-message.ts";

/** Options of `SqsWakes`: the client and the wake queue. */
export interface SqsWakesOptions {
  /** Default: a client with the SDK's defaults, created (and the SDK loaded) on the first send. */
  client?: SQSClient;
  /** The wake queue's URL. */
  queueUrl: string;
}

/**
 * Sends wake messages to the wake queue.
 *
 * @example
 * ```ts
 * const sqsWakes = new SqsWakes({ client: new SQSClient({}), queueUrl: process.env.WAYMARK_QUEUE_URL! });
 * await sqsWakes.send({ runId: "order-1", reason: "sleep", key: "sleep:nap", at: Date.now() + 60_000 }, 60);
 * ```
 */
export class SqsWakes {
  private client: SQSClient | undefined;
  private readonly queueUrl: string;

  constructor(options: SqsWakesOptions) {
    this.client = options.client;
    this.queueUrl = options.queueUrl;
  }

  /** Sends the wake now, to be delivered after `delaySeconds` (clamped to 0–900, rounded up). */
  async send(wake: Wake, delaySeconds: number): Promise<void> {
    const delay = Math.min(SQS_MAX_DELAY_SECONDS, Math.max(0, Math.ceil(delaySeconds)));
    const { SQSClient, SendMessageCommand } = await sqsSdk();
    this.client ??= new SQSClient({});
    await this.client.send(new SendMessageCommand({ QueueUrl: this.queueUrl, MessageBody: formatWakeMessage(wake), DelaySeconds: delay }));
  }
}
