/**
 * Wakes through SQS, on the SQS emulator (`local-aws-sqs`, started by the global setup): a real
 * protocol peer that honours per-message `DelaySeconds` and its 900 s cap. Receives use one
 * message per call (the emulator's long poll is wrong for `MaxNumberOfMessages > 1`).
 */
import { CreateQueueCommand, ReceiveMessageCommand, type Message, type SQSClient } from "@aws-sdk/client-sqs";
import { SchedulerClient } from "@aws-sdk/client-scheduler";
import { mockClient } from "aws-sdk-client-mock";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SchedulerWakes } from "../../lib/aws/scheduler-wakes.ts";
import { SqsWakes } from "../../lib/aws/sqs-wakes.ts";
import { parseWakeMessage } from "../../lib/aws/wake-message.ts";
import { AwsWakeQueue } from "../../lib/aws/wakes.ts";
import type { Wake } from "../../lib/ports.ts";
import { localSqsClient, uniqueName } from "../setup/clients.ts";

let client: SQSClient;
let queueUrl: string;
let queue: AwsWakeQueue;
const sentDelays: Array<number | undefined> = [];
// No Scheduler call may happen for these short delays: every call on this mock fails.
const schedulerClient = new SchedulerClient({ region: "us-east-1" });
mockClient(schedulerClient).onAnyCommand().rejects(new Error("Scheduler must not be used for delays ≤ 900 s"));

beforeAll(async () => {
  client = localSqsClient();
  client.middlewareStack.add(
    (next) => async (args) => {
      const input = args.input as { DelaySeconds?: number; MessageBody?: string };
      if (input.MessageBody !== undefined) sentDelays.push(input.DelaySeconds);
      return next(args);
    },
    { step: "initialize", name: "recordDelays" },
  );
  const created = await client.send(new CreateQueueCommand({ QueueName: uniqueName("wakes") }));
  queueUrl = created.QueueUrl ?? "";
  queue = new AwsWakeQueue({
    sqs: new SqsWakes({ client, queueUrl }),
    scheduler: new SchedulerWakes({ client: schedulerClient, groupName: "g", queueArn: "arn:q", roleArn: "arn:r", deadLetterArn: "arn:d" }),
  });
});

afterAll(() => client.destroy());

async function receive(waitSeconds: number): Promise<Message | undefined> {
  const out = await client.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 1, WaitTimeSeconds: waitSeconds }));
  return out.Messages?.[0];
}

describe("AwsWakeQueue over the SQS emulator", () => {
  it("delivers a due wake at once, and its body parses back to the same wake", async () => {
    const wake: Wake = { runId: "order-8472", reason: "continue", key: "continue", at: Date.now() - 5 };
    sentDelays.length = 0;
    await queue.schedule(wake);
    expect(sentDelays).toEqual([0]);
    const message = await receive(2);
    expect(message?.Body).toBeDefined();
    expect(parseWakeMessage(message?.Body ?? "")).toEqual(wake);
  });

  it("holds a wake until its time: the delay is rounded up to whole seconds and honoured", async () => {
    const sentAt = Date.now();
    const wake: Wake = { runId: "order-8473", reason: "sleep", key: "sleep:nap", at: sentAt + 1_200 };
    sentDelays.length = 0;
    await queue.schedule(wake);
    expect(sentDelays).toEqual([2]);
    expect(await receive(0), "not visible before its delay").toBeUndefined();
    let message: Message | undefined;
    const deadline = Date.now() + 10_000;
    while (!message && Date.now() < deadline) message = await receive(1);
    const waited = Date.now() - sentAt;
    expect(parseWakeMessage(message?.Body ?? "")).toEqual(wake);
    expect(waited).toBeGreaterThanOrEqual(1_900);
  });

  it("puts a wake 900 s ahead on SQS with the longest delay the queue allows", async () => {
    sentDelays.length = 0;
    const now = Date.now();
    const clocked = new AwsWakeQueue({
      sqs: new SqsWakes({ client, queueUrl }),
      scheduler: new SchedulerWakes({ client: schedulerClient, groupName: "g", queueArn: "arn:q", roleArn: "arn:r", deadLetterArn: "arn:d" }),
      clock: { now: () => now },
    });
    await clocked.schedule({ runId: "order-8474", reason: "timeout", key: "timeout:approval", at: now + 900_000 });
    expect(sentDelays).toEqual([900]);
    expect(await receive(0)).toBeUndefined();
  });
});
