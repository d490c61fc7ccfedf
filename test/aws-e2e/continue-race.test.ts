/**
 * KNOWN GAP (found by these tests, not fixed here): a wake that arrives while its run's lease is
 * still held is acknowledged and dropped (`sqs-entry.ts`: "busy" → ack, "the owner finishes
 * it"). But the owner schedules its own next wake BEFORE it releases the lease (engine.ts,
 * `suspend`: schedule, persist, release — "scheduling first"). For an immediate wake —
 * checkpoint-and-continue (`continue`), a signal that arrived meanwhile (`signal`), a retry
 * due now — another container can receive it within milliseconds, find the lease still held,
 * and acknowledge it. The owner then releases the lease and returns: the run is `suspended`,
 * due now, with no wake left anywhere. Only the watchdog (two minutes of grace, then its
 * schedule) moves it again.
 *
 * Reproduced deterministically with real components: container A's SQS client hands the
 * `continue` message it just sent to container B's event source loop before A's engine goes on
 * to release the lease.
 */
import { DeleteMessageCommand, GetQueueAttributesCommand, type Message } from "@aws-sdk/client-sqs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseWakeMessage } from "../../lib/aws/wake-message.ts";
import { peers } from "./endpoints.ts";
import { lambdaContext } from "./event-source.ts";
import { type E2e, createE2e, e2eClients } from "./harness.ts";
import { e2eWorkflows } from "./workflows.ts";

let e2e: E2e;
beforeAll(async () => {
  e2e = await createE2e({ endpoints: peers(), workflows: (ledger) => e2eWorkflows(ledger).all });
});
afterAll(() => e2e.close());

/** Runs the interleaving on a new run; returns once container A has released the lease. */
async function continueWakeConsumedUnderLease(runId: string): Promise<void> {
  await e2e.client.start("steps-flow", { runId, input: { steps: 4, holdMs: 100 } });
  const containerB = e2e.mapping();
  const sqsA = e2eClients(peers()).sqs;
  let raced = false;
  sqsA.middlewareStack.add(
    (next) => async (args) => {
      const out = await next(args);
      const body = (args.input as { MessageBody?: string }).MessageBody;
      if (!raced && body !== undefined && parseWakeMessage(body).reason === "continue") {
        raced = true;
        await containerB.pollOnce(); // B gets the wake while A still holds the lease
      }
      return out;
    },
    { step: "initialize", name: "raceTheContinueWake" },
  );
  const containerA = e2e.newHandler({}, { sqs: sqsA });
  let start: Message | undefined;
  const deadline = Date.now() + 5_000;
  while (!start && Date.now() < deadline) start = (await e2e.receive("queue")).find((m) => parseWakeMessage(m.Body ?? "").runId === runId);
  if (!start) throw new Error(`no start wake for ${runId}`);
  // A 200 ms function: two 100 ms steps, then it checkpoints (less than a quarter of its time left).
  const event = { Records: [{ messageId: start.MessageId ?? "", body: start.Body ?? "", eventSource: "aws:sqs", attributes: { ApproximateReceiveCount: "1" } }] };
  expect(await containerA(event, lambdaContext(200))).toEqual({ batchItemFailures: [] });
  await e2e.clients.sqs.send(new DeleteMessageCommand({ QueueUrl: e2e.queues.queueUrl, ReceiptHandle: start.ReceiptHandle })); // as the event source mapping does
  sqsA.destroy();
  expect(raced, "A checkpointed through a continue wake").toBe(true);
}

async function queueIsEmpty(): Promise<boolean> {
  const { Attributes: a } = await e2e.clients.sqs.send(new GetQueueAttributesCommand({ QueueUrl: e2e.queues.queueUrl, AttributeNames: ["All"] }));
  return [a?.ApproximateNumberOfMessages, a?.ApproximateNumberOfMessagesNotVisible, a?.ApproximateNumberOfMessagesDelayed].every((n) => n === "0");
}

describe("a continue wake consumed while its owner still holds the lease", () => {
  it("today: it is acknowledged as busy and the run is left suspended with no wake; only the watchdog recovers it", async () => {
    const runId = "gap-1";
    await continueWakeConsumedUnderLease(runId);
    expect(e2e.lines("wake", runId).map((l) => [l.reason, l.outcome])).toEqual([["continue", "busy"], ["start", "suspended"]]);
    const run = await e2e.run(runId);
    expect([run.status, run.waitingFor, run.lease]).toEqual(["suspended", "continue", undefined]);
    expect(await queueIsEmpty(), "no wake left on the queue").toBe(true);
    expect(e2e.scheduler.schedules.size, "nor on the Scheduler").toBe(0);

    await e2e.advance(3 * 60_000);
    expect(await e2e.handler({ waymark: "watchdog" }, lambdaContext())).toEqual({ woken: [runId] });
    await e2e.mapping().runUntil(e2e.finished([runId]), { what: "the watchdog-woken run to finish" });
    expect((await e2e.run(runId)).status).toBe("completed");
    expect(e2e.ledger.repeated(runId)).toEqual([]);
  });

  // Fails until the gap is closed: e.g. the Lambda entry re-sends a busy wake with a delay of
  // the lease's remaining time instead of dropping it, or the engine sends immediate wakes after
  // releasing the lease (a crash in between leaves a run due now, which the watchdog finds).
  it.fails("wanted: some wake for the run survives, so it continues without the watchdog", async () => {
    await continueWakeConsumedUnderLease("gap-2");
    expect(await queueIsEmpty()).toBe(false);
  });
});
