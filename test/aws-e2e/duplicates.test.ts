/**
 * At-least-once delivery on the AWS runtime: every wake delivered twice (inside one batch, and
 * again in a later batch), two Lambda containers invoked with the same wake at the same moment,
 * and a wake delivered again once its run has gone to sleep. Every step body runs once (counted
 * per idempotency key), every run completes.
 */
import { DeleteMessageCommand } from "@aws-sdk/client-sqs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SqsBatchResponse } from "../../lib/aws/lambda-types.ts";
import { parseWakeMessage } from "../../lib/aws/wake-message.ts";
import { peers } from "./endpoints.ts";
import { lambdaContext } from "./event-source.ts";
import { type E2e, createE2e } from "./harness.ts";
import { e2eWorkflows } from "./workflows.ts";

// One harness (table, queue) per scenario, so one's leftover copies never reach the other.
let e2e: E2e;
function freshHarness(): void {
  beforeAll(async () => {
    e2e = await createE2e({ endpoints: peers(), workflows: (ledger) => e2eWorkflows(ledger).all });
  });
  afterAll(() => e2e.close());
}

const ids = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}-${i + 1}`);

describe("duplicate delivery", () => {
  freshHarness();
  it("every wake delivered twice, in one batch and across batches: each step runs once, every run completes", async () => {
    const runs = ids("dup", 8);
    for (const runId of runs) await e2e.client.start("steps-flow", { runId, input: { steps: 6, nap: "1s" } });
    const loop = e2e.mapping({ duplicate: true });
    await loop.runUntil(e2e.finished(runs), { what: "every run to finish", pollers: 2 });

    for (const runId of runs) {
      expect((await e2e.run(runId)).status, runId).toBe("completed");
      expect(e2e.ledger.counts(runId).size, runId).toBe(6);
    }
    expect(e2e.ledger.repeated(), "keys executed more than once").toEqual([]);
    // Both kinds of duplicate really happened: second records in a batch, and copies re-queued.
    const starts = e2e.sent.filter((m) => parseWakeMessage(m.body).reason === "start");
    expect(starts.length, "each start wake and its copy").toBe(runs.length * 2);
    expect(e2e.lines("wake").filter((l) => l.outcome === "duplicate-in-batch").length).toBeGreaterThanOrEqual(runs.length * 2);
    expect(e2e.lines("wake").filter((l) => l.outcome === "completed").map((l) => l.runId).sort()).toEqual([...runs].sort());
  });
});

describe("two invocations of one run at the same moment", () => {
  freshHarness();
  it("two Lambda containers handed the same wake at once: no step runs twice", async () => {
    const runs = ids("twin", 10);
    for (const runId of runs) await e2e.client.start("steps-flow", { runId, input: { steps: 5, holdMs: 20 } });
    const messages = [];
    const deadline = Date.now() + 10_000;
    while (messages.length < runs.length && Date.now() < deadline) messages.push(...(await e2e.receive("queue")));
    expect(messages.map((m) => parseWakeMessage(m.Body ?? "").runId).sort()).toEqual([...runs].sort());

    const [a, b] = [e2e.handler, e2e.newHandler()];
    await Promise.all(
      messages.map(async (m) => {
        const event = { Records: [{ messageId: m.MessageId ?? "", body: m.Body ?? "", eventSource: "aws:sqs", attributes: { ApproximateReceiveCount: "1" } }] };
        const answers = (await Promise.all([a(event, lambdaContext()), b(event, lambdaContext())])) as SqsBatchResponse[];
        expect(answers).toEqual([{ batchItemFailures: [] }, { batchItemFailures: [] }]);
        await e2e.clients.sqs.send(new DeleteMessageCommand({ QueueUrl: e2e.queues.queueUrl, ReceiptHandle: m.ReceiptHandle }));
      }),
    );

    for (const runId of runs) {
      expect((await e2e.run(runId)).status, runId).toBe("completed");
      // One container ran it; the other found the lease held (or the run already finished).
      const outcomes = e2e.lines("wake", runId).map((l) => l.outcome).sort();
      expect(["busy", "finished"]).toContain(outcomes[0]);
      expect(outcomes).toHaveLength(2);
      expect(outcomes).toContain("completed");
      expect(e2e.ledger.counts(runId).size).toBe(5);
    }
    expect(e2e.ledger.repeated(), "keys executed more than once").toEqual([]);
  });
});

describe("a wake delivered again after its run went to sleep", () => {
  freshHarness();
  it("is refused as not due with one DynamoDB request: the run is not invoked, nothing is written or scheduled", async () => {
    const runId = "dup-sleeper";
    await e2e.client.start("nap-flow", { runId, input: { nap: "20m" } });
    const [start] = await e2e.receive("queue");
    if (!start) throw new Error("no start wake");
    const event = { Records: [{ messageId: start.MessageId ?? "", body: start.Body ?? "", eventSource: "aws:sqs", attributes: { ApproximateReceiveCount: "1" } }] };
    expect(await e2e.handler(event, lambdaContext())).toEqual({ batchItemFailures: [] });
    const asleep = await e2e.run(runId);
    expect(asleep).toMatchObject({ status: "suspended", waitingFor: "sleep:nap" });
    const [sent, schedules] = [e2e.sent.length, e2e.scheduler.calls.length];

    // The same start wake again (SQS redelivers it, or sent it twice), in another container: one
    // conditional write, refused. In the container that handled it: no request at all.
    const requests: string[] = [];
    e2e.clients.dynamodb.middlewareStack.add((next, context) => async (args) => (requests.push(String(context.commandName)), next(args)), { step: "initialize", name: "countDuplicate" });
    expect(await e2e.newHandler()(event, lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(requests).toEqual(["UpdateItemCommand"]);
    expect(await e2e.handler(event, lambdaContext())).toEqual({ batchItemFailures: [] });
    e2e.clients.dynamodb.middlewareStack.remove("countDuplicate");
    expect(requests).toEqual(["UpdateItemCommand"]);
    expect(e2e.lines("wake", runId).map((l) => l.outcome)).toEqual(["suspended", "not-due", "redelivered"]);
    expect(await e2e.run(runId)).toEqual(asleep);
    expect([e2e.sent.length, e2e.scheduler.calls.length]).toEqual([sent, schedules]);

    // The sleep's own wake still runs it to the end.
    await e2e.advance(21 * 60_000);
    await e2e.mapping().runUntil(e2e.finished([runId]), { what: "the sleeper to complete" });
    expect((await e2e.run(runId)).status).toBe("completed");
    expect([...e2e.ledger.counts(runId)]).toEqual([[`${runId}/before`, 1], [`${runId}/after`, 1]]);
  });
});

describe("a message whose handling failed, delivered again to the same container", () => {
  freshHarness();
  it("is handled again (only a message handled to its end is remembered), and then its copies are answered without a request", async () => {
    const runId = "dup-failed";
    await e2e.client.start("steps-flow", { runId, input: { steps: 2 } });
    const [start] = await e2e.receive("queue");
    if (!start) throw new Error("no start wake");
    const event = { Records: [{ messageId: start.MessageId ?? "", body: start.Body ?? "", eventSource: "aws:sqs", attributes: { ApproximateReceiveCount: "1" } }] };
    // The fault: DynamoDB unreachable for the first delivery's requests.
    e2e.clients.dynamodb.middlewareStack.add(() => async () => { throw new Error("connection reset (injected)"); }, { step: "initialize", name: "unreachable" });
    expect(await e2e.handler(event, lambdaContext())).toEqual({ batchItemFailures: [{ itemIdentifier: start.MessageId }] });
    e2e.clients.dynamodb.middlewareStack.remove("unreachable");
    expect((await e2e.run(runId)).status).toBe("pending");

    expect(await e2e.handler(event, lambdaContext())).toEqual({ batchItemFailures: [] });
    expect((await e2e.run(runId)).status).toBe("completed");
    const requests: string[] = [];
    e2e.clients.dynamodb.middlewareStack.add((next, context) => async (args) => (requests.push(String(context.commandName)), next(args)), { step: "initialize", name: "countCopy" });
    expect(await e2e.handler(event, lambdaContext())).toEqual({ batchItemFailures: [] });
    e2e.clients.dynamodb.middlewareStack.remove("countCopy");
    expect(requests).toEqual([]);
    expect(e2e.lines("wake", runId).map((l) => l.outcome)).toEqual(["error", "completed", "redelivered"]);
    expect(e2e.ledger.repeated()).toEqual([]);
  });
});
