/**
 * Poison on the AWS runtime never loops. A run whose workflow throws on every attempt ends
 * `failed` after its bounded retries and is listed as failed; a message the function can never
 * handle (a wake for a workflow it does not host, a body that is not a wake) is reported in
 * `batchItemFailures` on every receive and lands in the DLQ after `maxReceiveCount` receives.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GetQueueAttributesCommand, SendMessageCommand, type Message } from "@aws-sdk/client-sqs";
import { SqsWakes } from "../../lib/aws/sqs-wakes.ts";
import { peers } from "./endpoints.ts";
import { lambdaContext } from "./event-source.ts";
import { type E2e, createE2e } from "./harness.ts";
import { e2eWorkflows } from "./workflows.ts";

const MAX_RECEIVES = 3;
let e2e: E2e;
beforeAll(async () => {
  e2e = await createE2e({ endpoints: peers(), workflows: (ledger) => e2eWorkflows(ledger).all, maxReceiveCount: MAX_RECEIVES });
});
afterAll(() => e2e.close());

describe("poison", () => {
  it("a run whose workflow throws on every attempt ends failed after its retries, and is listed as failed", async () => {
    const runId = "poison-run";
    await e2e.client.start("poison-flow", { runId, input: {} });
    await e2e.mapping().runUntil(e2e.finished([runId]), { what: "the poison run to finish" });

    const run = await e2e.run(runId);
    expect(run.status).toBe("failed");
    expect(run.error).toMatchObject({ name: "StepFailedError" });
    expect(e2e.ledger.read().map((e) => [e.key, e.attempt])).toEqual([1, 2, 3].map((a) => [`${runId}/explode`, a]));
    // Three invocations (the start and two retry wakes), then nothing more.
    expect(e2e.lines("wake", runId).map((l) => [l.reason, l.outcome])).toEqual([["start", "suspended"], ["retry", "suspended"], ["retry", "failed"]]);
    const failed = await e2e.client.list({ status: "failed" });
    expect(failed.runs.map((r) => r.runId)).toEqual([runId]);
  });

  it(`a body that is not a wake is failed on each of its ${MAX_RECEIVES} receives, then dead-lettered`, async () => {
    await e2e.clients.sqs.send(new SendMessageCommand({ QueueUrl: e2e.queues.queueUrl, MessageBody: "hello, not a wake" }));

    const dead: Message[] = [];
    const loop = e2e.mapping();
    await loop.runUntil(async () => {
      dead.push(...(await e2e.receive("dlq")));
      return dead.length === 1;
    }, { what: "the message in the DLQ" });

    const id = dead[0]?.MessageId ?? "";
    const seen = loop.invocations.filter((i) => i.messageIds.includes(id));
    expect(seen, "one handler invocation per receive").toHaveLength(MAX_RECEIVES);
    expect(seen.every((i) => i.failures.includes(id)), "each one reported in batchItemFailures").toBe(true);
    const errors = e2e.lines("wake").filter((l) => l.outcome === "error").map((l) => (l.error as { name: string }).name);
    expect(errors.filter((n) => n === "MalformedWakeError")).toHaveLength(MAX_RECEIVES);

    // Nothing of it is left on the wake queue (visible, in flight or delayed): it cannot come back.
    const { Attributes } = await e2e.clients.sqs.send(new GetQueueAttributesCommand({ QueueUrl: e2e.queues.queueUrl, AttributeNames: ["All"] }));
    expect([Attributes?.ApproximateNumberOfMessages, Attributes?.ApproximateNumberOfMessagesNotVisible, Attributes?.ApproximateNumberOfMessagesDelayed]).toEqual(["0", "0", "0"]);
  });

  it("a run of a workflow this deploy does not host waits, backing off, says why, and is not re-woken by every sweep", async () => {
    // Another deploy's run (refund-flow is not hosted here). Before: every receive failed, the
    // message went to the DLQ, and every watchdog sweep woke the run again, forever.
    await e2e.store.createRun({ runId: "elsewhere-1", workflow: "refund-flow", input: {}, createdAt: e2e.clock.now() });
    await new SqsWakes({ client: e2e.clients.sqs, queueUrl: e2e.queues.queueUrl }).send({ runId: "elsewhere-1", reason: "start", key: "start", at: e2e.clock.now() }, 0);
    const loop = e2e.mapping();
    await loop.runUntil(async () => e2e.lines("wake", "elsewhere-1").length > 0, { what: "the wake to be handled" });
    expect(loop.invocations.flatMap((i) => i.failures)).toEqual([]); // acknowledged, not failed
    expect(e2e.lines("wake", "elsewhere-1").map((l) => [l.outcome, l.level])).toEqual([["unhosted", "warn"]]);
    const first = await e2e.run("elsewhere-1");
    expect(first).toMatchObject({ status: "suspended", waitingFor: "workflow-not-hosted:refund-flow:1" });
    expect(first.wakeAt).toBe(first.updatedAt + 10_000);
    expect((await e2e.client.list({ status: "suspended" })).runs.map((r) => [r.runId, r.waitingFor])).toContainEqual(["elsewhere-1", "workflow-not-hosted:refund-flow:1"]);

    // A sweep before the backoff has passed leaves it alone; after, it wakes it once, and the
    // next attempt backs off four times longer.
    expect(((await e2e.handler({ waymark: "watchdog" }, lambdaContext())) as { woken: string[] }).woken).not.toContain("elsewhere-1");
    await e2e.advance(10_000 + 120_000 + 1);
    expect(((await e2e.handler({ waymark: "watchdog" }, lambdaContext())) as { woken: string[] }).woken).toContain("elsewhere-1");
    await loop.runUntil(async () => e2e.lines("wake", "elsewhere-1").length > 1, { what: "the second attempt" });
    const second = await e2e.run("elsewhere-1");
    expect(second).toMatchObject({ status: "suspended", waitingFor: "workflow-not-hosted:refund-flow:2" });
    expect(second.wakeAt).toBe(second.updatedAt + 40_000);
    expect(((await e2e.handler({ waymark: "watchdog" }, lambdaContext())) as { woken: string[] }).woken).not.toContain("elsewhere-1");
    expect(await e2e.receive("dlq")).toEqual([]);
  });
});
