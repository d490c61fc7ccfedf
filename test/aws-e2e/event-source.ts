/**
 * A stand-in for Lambda's SQS event source mapping, against the real SQS emulator: it receives
 * batches, turns them into the SQS event Lambda would deliver, calls the handler with a context
 * whose remaining time counts down, deletes what succeeded and leaves the rest to reappear after
 * the visibility timeout (partial batch responses, `ReportBatchItemFailures`).
 *
 * As Lambda does: a handler that throws, or runs past its timeout, fails the whole batch; an
 * answer listing an id that is not in the batch fails the whole batch too. Receives are short
 * polls (the emulator's long poll is wrong with `MaxNumberOfMessages > 1`, see docs/testing.md).
 */
import { randomUUID } from "node:crypto";
import { setTimeout as delay } from "node:timers/promises";
import { DeleteMessageCommand, ReceiveMessageCommand, SendMessageCommand, type Message, type SQSClient } from "@aws-sdk/client-sqs";
import type { LambdaContext, SqsBatchResponse } from "../../lib/aws/lambda-types.ts";

export type Handler = (event: unknown, context: LambdaContext) => Promise<unknown>;

/** An SQS record as Lambda delivers it (every field, not only those Waymark reads). */
export interface LambdaSqsRecord {
  messageId: string;
  receiptHandle: string;
  body: string;
  attributes: { ApproximateReceiveCount: string; SentTimestamp: string; ApproximateFirstReceiveTimestamp: string };
  messageAttributes: Record<string, never>;
  md5OfBody: string;
  eventSource: "aws:sqs";
  eventSourceARN: string;
  awsRegion: string;
}

export interface EventSourceOptions {
  sqs: SQSClient;
  queueUrl: string;
  queueArn: string;
  handler: Handler;
  /** Most records per invocation (Lambda: 1–10 for this setup). Default 10. */
  batchSize?: number;
  /** The function timeout `getRemainingTimeInMillis()` counts down from. Default 30 s. */
  functionTimeoutMs?: number;
  /**
   * Deliver every message twice: a second record of it in the same batch, and a copy sent back
   * to the queue (so it comes again in a later batch). Copies are not duplicated again.
   */
  duplicate?: boolean;
  /** Runs before every poll (the Scheduler stand-in fires its due schedules here). */
  beforePoll?: () => Promise<unknown>;
}

/** A Lambda context for one invocation: its remaining time counts down from `timeoutMs`. */
export function lambdaContext(timeoutMs = 30_000): LambdaContext {
  const deadline = Date.now() + timeoutMs;
  return { getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()), awsRequestId: randomUUID() };
}

/** One handler invocation, as the loop saw it. */
export interface BatchInvocation {
  messageIds: string[];
  failures: string[];
  /** The handler threw or timed out: every message stays on the queue. */
  error?: string;
  /** When the handler answered, in ms from the start of its context's countdown. */
  answeredAfterMs?: number;
}

export class EventSourceMapping {
  readonly invocations: BatchInvocation[] = [];
  private readonly copies = new Set<string>();

  constructor(private readonly o: EventSourceOptions) {}

  /** Receives one batch and invokes the handler with it; returns how many messages it held. */
  async pollOnce(): Promise<number> {
    await this.o.beforePoll?.();
    // `AttributeNames`, not `MessageSystemAttributeNames`: the emulator answers only the former.
    const received = await this.o.sqs.send(
      new ReceiveMessageCommand({ QueueUrl: this.o.queueUrl, MaxNumberOfMessages: this.o.batchSize ?? 10, WaitTimeSeconds: 0, AttributeNames: ["All"] }),
    );
    const messages = received.Messages ?? [];
    if (messages.length === 0) return 0;
    const records: LambdaSqsRecord[] = [];
    for (const m of messages) {
      records.push(this.record(m));
      if (this.o.duplicate && m.MessageId && !this.copies.has(m.MessageId)) {
        records.push(this.record(m));
        const copy = await this.o.sqs.send(new SendMessageCommand({ QueueUrl: this.o.queueUrl, MessageBody: m.Body ?? "" }));
        if (copy.MessageId) this.copies.add(copy.MessageId);
      }
    }
    const invocation: BatchInvocation = { messageIds: messages.map((m) => m.MessageId ?? ""), failures: [] };
    this.invocations.push(invocation);
    const failed = await this.invoke(records, invocation);
    await Promise.all(
      messages
        .filter((m) => !failed.has(m.MessageId ?? ""))
        .map((m) => this.o.sqs.send(new DeleteMessageCommand({ QueueUrl: this.o.queueUrl, ReceiptHandle: m.ReceiptHandle }))),
    );
    return messages.length;
  }

  /**
   * Polls (with `pollers` loops at once, as Lambda scales out) until `done()` holds; throws
   * once `deadlineMs` has passed, saying what it waited for.
   */
  async runUntil(done: () => Promise<boolean> | boolean, options: { deadlineMs?: number; pollers?: number; what?: string } = {}): Promise<void> {
    const deadline = Date.now() + (options.deadlineMs ?? 120_000);
    let finished = false;
    const loop = async (): Promise<void> => {
      try {
        while (!finished) {
          if (await done()) break;
          if (Date.now() > deadline) {
            throw new Error(`event source loop: ${options.what ?? "condition"} not met within ${options.deadlineMs ?? 120_000} ms (${this.invocations.length} invocations)`);
          }
          if ((await this.pollOnce()) === 0) await delay(25);
        }
      } finally {
        finished = true; // one loop done (or failed) stops the others
      }
    };
    await Promise.all(Array.from({ length: options.pollers ?? 1 }, loop));
  }

  /** Calls the handler as Lambda would; returns the message ids to keep on the queue. */
  private async invoke(records: LambdaSqsRecord[], invocation: BatchInvocation): Promise<Set<string>> {
    const everything = new Set(records.map((r) => r.messageId));
    const timeoutMs = this.o.functionTimeoutMs ?? 30_000;
    const began = Date.now();
    const context = lambdaContext(timeoutMs);
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<"timeout">((resolve) => (timer = setTimeout(() => resolve("timeout"), timeoutMs)));
    try {
      const answer = await Promise.race([this.o.handler({ Records: records }, context), timedOut]);
      invocation.answeredAfterMs = Date.now() - began;
      if (answer === "timeout") {
        invocation.error = `Task timed out after ${timeoutMs} ms`;
        return everything;
      }
      const failures = (answer as Partial<SqsBatchResponse> | undefined)?.batchItemFailures ?? [];
      const ids = failures.map((f) => f.itemIdentifier);
      invocation.failures = ids;
      // Lambda treats an identifier that is not in the batch as a failure of the whole batch.
      if (ids.some((id) => !everything.has(id))) return everything;
      return new Set(ids);
    } catch (err) {
      invocation.error = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
      return everything;
    } finally {
      clearTimeout(timer);
    }
  }

  private record(m: Message): LambdaSqsRecord {
    return {
      messageId: m.MessageId ?? "",
      receiptHandle: m.ReceiptHandle ?? "",
      body: m.Body ?? "",
      attributes: {
        ApproximateReceiveCount: m.Attributes?.ApproximateReceiveCount ?? "1",
        SentTimestamp: m.Attributes?.SentTimestamp ?? String(Date.now()),
        ApproximateFirstReceiveTimestamp: m.Attributes?.ApproximateFirstReceiveTimestamp ?? String(Date.now()),
      },
      messageAttributes: {},
      md5OfBody: m.MD5OfBody ?? "",
      eventSource: "aws:sqs",
      eventSourceARN: this.o.queueArn,
      awsRegion: "us-east-1",
    };
  }
}
