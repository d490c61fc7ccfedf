/**
 * A wake that arrives while its run's lease is still held is acknowledged ("busy": the owner
 * finishes the work). So the owner must not send its own next wake while it still holds the
 * lease: the engine releases first, then schedules (engine.ts, `suspend`). This was a real gap:
 * an immediate `continue` wake, received by another container within milliseconds, was
 * acknowledged as busy and the run stayed suspended until the watchdog.
 *
 * Reproduced deterministically with real components: container A's SQS client hands the
 * `continue` message it just sent to container B's event source loop before A's handler returns.
 */
import { DeleteMessageCommand, type Message } from "@aws-sdk/client-sqs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseWakeMessage } from "../../lib/aws/wake-message.ts";
import { peers } from "./endpoints.ts";
import { lambdaContext } from "./event-source.ts";
import { type E2e, createE2e, e2eClients } from "./harness.ts";
import { e2eWorkflows } from "./workflows.ts";

let e2e: E2e;
beforeAll(async () => {
  // The start message stays hidden while container A works on it (a 10 s function; A then deletes
  // it, as the event source mapping does), so B's poll finds the continue wake, not the start.
  e2e = await createE2e({ endpoints: peers(), workflows: (ledger) => e2eWorkflows(ledger).all, visibilityTimeoutS: 15 });
});
afterAll(() => e2e.close());

/** Runs the interleaving on a new run; returns once container A has released the lease. */
async function continueWakeConsumedUnderLease(runId: string): Promise<void> {
  await e2e.client.start("steps-flow", { runId, input: { steps: 4, holdMs: 4_000 } });
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
  // A 10 s function: two 4 s steps, then it checkpoints (less than a quarter of its time left),
  // a second before its deadline (the remaining time less a tenth), which a third step would
  // pass. (A 2 s function with 820 ms steps left 160 ms for that checkpoint: on a loaded machine
  // the invocation passed its deadline first and gave the run up, `abandoned`.)
  const event = { Records: [{ messageId: start.MessageId ?? "", body: start.Body ?? "", eventSource: "aws:sqs", attributes: { ApproximateReceiveCount: "1" } }] };
  expect(await containerA(event, lambdaContext(10_000))).toEqual({ batchItemFailures: [] });
  await e2e.clients.sqs.send(new DeleteMessageCommand({ QueueUrl: e2e.queues.queueUrl, ReceiptHandle: start.ReceiptHandle })); // as the event source mapping does
  sqsA.destroy();
  expect(raced, "A checkpointed through a continue wake").toBe(true);
}

describe("a continue wake received at once by another container", () => {
  it("finds the lease already released: that container runs the run on, and it completes without the watchdog", async () => {
    const runId = "gap-1";
    await continueWakeConsumedUnderLease(runId);
    const outcomes = e2e.lines("wake", runId).map((l) => [l.reason, l.outcome]);
    expect(outcomes).not.toContainEqual(["continue", "busy"]);
    expect(outcomes[0]?.[0]).toBe("continue");
    await e2e.mapping().runUntil(e2e.finished([runId]), { what: "the run to finish through its continue wakes" });
    expect((await e2e.run(runId)).status).toBe("completed");
    expect(e2e.lines("watchdog", runId)).toEqual([]);
    expect(e2e.ledger.repeated(runId)).toEqual([]);
  });
});
