/**
 * Keeping runs moving on the AWS runtime: a run longer than one invocation checkpoints before
 * Lambda's timeout and continues through immediate wakes; a run whose wake was lost is found by
 * the watchdog invocation once it is overdue, and completes.
 */
import { DeleteMessageCommand } from "@aws-sdk/client-sqs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseWakeMessage } from "../../lib/aws/wake-message.ts";
import { peers } from "./endpoints.ts";
import { lambdaContext } from "./event-source.ts";
import { type E2e, createE2e } from "./harness.ts";
import { e2eWorkflows } from "./workflows.ts";

let e2e: E2e;
beforeAll(async () => {
  e2e = await createE2e({ endpoints: peers(), workflows: (ledger) => e2eWorkflows(ledger).all });
});
afterAll(() => e2e.close());

describe("checkpoint and continue", () => {
  it("a run longer than the function timeout continues in further invocations through immediate wakes", async () => {
    const runId = "long-1";
    // 20 steps of 100 ms against a 1 s function timeout: the margin (a quarter of it) stops
    // each invocation after about seven steps.
    await e2e.client.start("steps-flow", { runId, input: { steps: 20, holdMs: 100 } });
    const loop = e2e.mapping({ functionTimeoutMs: 1_000 });
    await loop.runUntil(e2e.finished([runId]), { what: "the long run to finish" });

    expect((await e2e.run(runId)).status).toBe("completed");
    expect((await e2e.run(runId)).result).toEqual({ sum: 210 });
    expect(e2e.ledger.counts(runId).size).toBe(20);
    expect(e2e.ledger.repeated(runId)).toEqual([]);
    expect(loop.invocations.filter((i) => i.error !== undefined), "no invocation ran past its timeout").toEqual([]);
    const wakes = e2e.lines("wake", runId);
    const continues = wakes.filter((l) => l.reason === "continue");
    expect(continues.length).toBeGreaterThanOrEqual(2);
    expect(wakes.filter((l) => l.outcome === "suspended").length).toBe(continues.length);
    // Each checkpoint was an immediate SQS wake (no delay, no schedule).
    const sent = e2e.sent.filter((m) => parseWakeMessage(m.body).reason === "continue");
    expect(sent.map((m) => m.delaySeconds)).toEqual(continues.map(() => 0));
    expect(e2e.scheduler.calls).toEqual([]);
  });
});

describe("the watchdog", () => {
  it("finds a run whose wake was lost once it is overdue, wakes it, and it completes", async () => {
    const runId = "lost-1";
    const started = await e2e.handler({ waymark: "start", runId, input: { nap: "1s" }, workflow: "nap-flow" }, lambdaContext());
    expect(started).toMatchObject({ ok: true, created: true });
    // The start wake is lost: take it off the queue without invoking anything.
    const deadline = Date.now() + 5_000;
    let lost = false;
    while (!lost && Date.now() < deadline) {
      for (const m of await e2e.receive("queue")) {
        if (parseWakeMessage(m.Body ?? "").runId !== runId) continue;
        await e2e.clients.sqs.send(new DeleteMessageCommand({ QueueUrl: e2e.queues.queueUrl, ReceiptHandle: m.ReceiptHandle }));
        lost = true;
      }
    }
    expect(lost).toBe(true);
    expect((await e2e.run(runId)).status).toBe("pending");

    // Not yet overdue (the sweep leaves two minutes for wakes in flight): nothing to wake.
    expect(await e2e.handler({ waymark: "watchdog" }, lambdaContext())).toEqual({ woken: [] });
    await e2e.advance(3 * 60_000);
    expect(await e2e.handler({ waymark: "watchdog" }, lambdaContext())).toEqual({ woken: [runId] });
    expect(e2e.lines("watchdog", runId)).toHaveLength(1);

    await e2e.mapping().runUntil(e2e.finished([runId]), { what: "the recovered run to finish" });
    expect((await e2e.run(runId)).status).toBe("completed");
    expect([...e2e.ledger.counts(runId).values()]).toEqual([1, 1]);
  });
});
