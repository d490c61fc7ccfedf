/**
 * Two functions on one engine, as `DurableEngine` deploys them: one journal table in DynamoDB
 * Local, a wake queue each in the SQS emulator, each function the real Lambda handler with the
 * environment the construct gives it (`watchdogHostedOnly` on both, the orphan sweep on the
 * first). "orders" hosts `nap-flow`, "refunds" hosts `steps-flow`.
 *
 * What must hold: a wake for a run reaches a function that hosts its workflow — each run's wakes
 * go to its own function's queue, each watchdog wakes only its own function's runs (a wake sent to
 * the other would leave the run `unhosted`, pushed back), a run that no function hosts is still
 * reported by the first function once its overdue time shows nobody took it, and a signal sent
 * through the function that does not host the run is refused before anything is written.
 */
import { DeleteMessageCommand } from "@aws-sdk/client-sqs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseWakeMessage } from "../../lib/aws/wake-message.ts";
import { UnknownWorkflowError } from "../../lib/core/errors.ts";
import { peers } from "../aws-e2e/endpoints.ts";
import { lambdaContext } from "../aws-e2e/event-source.ts";
import { E2e, createWakeQueues, e2eClients, e2eConfig } from "../aws-e2e/harness.ts";
import { e2eWorkflows } from "../aws-e2e/workflows.ts";
import { createJournalTable } from "../setup/tables.ts";
import { uniqueName } from "../setup/clients.ts";

/** What the construct sets on the engine's first function (2 × 5 min + 3 min). */
const ORPHANS_AFTER_MS = 780_000;

let orders: E2e;
let refunds: E2e;

beforeAll(async () => {
  const setup = e2eClients(peers());
  const tableName = await createJournalTable(setup.dynamodb, "shared");
  const queue = (name: string) => createWakeQueues(setup.sqs, uniqueName(name), { visibilityTimeoutS: 2, maxReceiveCount: 3 });
  const [ordersQueues, refundsQueues] = await Promise.all([queue("orders"), queue("refunds")]);
  setup.dynamodb.destroy();
  setup.sqs.destroy();
  orders = new E2e(e2eClients(peers()), tableName, ordersQueues, e2eConfig(tableName, ordersQueues, { watchdogHostedOnly: true, watchdogOrphansAfterMs: ORPHANS_AFTER_MS }), (l) => [e2eWorkflows(l).napFlow]);
  refunds = new E2e(e2eClients(peers()), tableName, refundsQueues, e2eConfig(tableName, refundsQueues, { watchdogHostedOnly: true }), (l) => [e2eWorkflows(l).stepsFlow]);
});
afterAll(() => {
  orders?.close();
  refunds?.close();
});

/** Both functions' clocks move together (one table, one time). */
async function advance(ms: number): Promise<void> {
  await orders.advance(ms);
  await refunds.advance(ms);
}

/** Takes every wake off a function's queue without invoking anything: the wakes are lost. */
async function loseWakes(fn: E2e, runIds: readonly string[]): Promise<void> {
  const lost = new Set<string>();
  const deadline = Date.now() + 10_000;
  while (lost.size < runIds.length) {
    if (Date.now() > deadline) throw new Error(`wakes of ${runIds.filter((r) => !lost.has(r)).join(", ")} never seen`);
    for (const m of await fn.receive("queue")) {
      const runId = parseWakeMessage(m.Body ?? "").runId;
      await fn.clients.sqs.send(new DeleteMessageCommand({ QueueUrl: fn.queues.queueUrl, ReceiptHandle: m.ReceiptHandle }));
      if (runIds.includes(runId)) lost.add(runId);
    }
  }
}

const sentRuns = (fn: E2e) => new Set(fn.sent.map((m) => parseWakeMessage(m.body).runId));

describe("two functions on one journal table, a wake queue each", () => {
  it("each run's wakes go through its own function's queue, and both finish", async () => {
    await orders.client.start("nap-flow", { runId: "order-1", input: { nap: "1s" } });
    await refunds.client.start("steps-flow", { runId: "refund-1", input: { steps: 3 } });
    await Promise.all([
      orders.mapping().runUntil(orders.finished(["order-1"]), { what: "order-1 to finish" }),
      refunds.mapping().runUntil(refunds.finished(["refund-1"]), { what: "refund-1 to finish" }),
    ]);
    expect((await orders.run("order-1")).status).toBe("completed");
    expect((await refunds.run("refund-1")).result).toEqual({ sum: 6 });
    expect(sentRuns(orders)).toEqual(new Set(["order-1"]));
    expect(sentRuns(refunds)).toEqual(new Set(["refund-1"]));
    expect([...orders.lines("unhosted"), ...refunds.lines("unhosted")]).toEqual([]);
  });

  it("each watchdog wakes only the overdue runs of its own workflows, through its own queue; both recover", async () => {
    await orders.client.start("nap-flow", { runId: "order-2", input: { nap: "1s" } });
    await refunds.client.start("steps-flow", { runId: "refund-2", input: { steps: 2 } });
    await Promise.all([loseWakes(orders, ["order-2"]), loseWakes(refunds, ["refund-2"])]);
    await advance(3 * 60_000); // past the sweep's two-minute grace
    expect(await orders.handler({ waymark: "watchdog" }, lambdaContext())).toEqual({ woken: ["order-2"] });
    expect(await refunds.handler({ waymark: "watchdog" }, lambdaContext())).toEqual({ woken: ["refund-2"] });
    await Promise.all([
      orders.mapping().runUntil(orders.finished(["order-2"]), { what: "order-2 to recover" }),
      refunds.mapping().runUntil(refunds.finished(["refund-2"]), { what: "refund-2 to recover" }),
    ]);
    expect((await orders.run("order-2")).status).toBe("completed");
    expect((await refunds.run("refund-2")).status).toBe("completed");
    // No run went to the function that cannot run it.
    expect([...orders.lines("unhosted"), ...refunds.lines("unhosted")]).toEqual([]);
    expect(orders.lines("watchdog").map((l) => l.runId)).toEqual(["order-2"]);
    expect(refunds.lines("watchdog").map((l) => l.runId)).toEqual(["refund-2"]);
  });

  it("a run no function hosts: left to the others' sweeps, then woken by the first function past the orphan time, and reported as unhosted", async () => {
    await orders.store.createRun({ runId: "gone-1", workflow: "gone-flow", input: {}, createdAt: orders.clock.now() });
    await advance(3 * 60_000);
    expect((await refunds.handler({ waymark: "watchdog" }, lambdaContext())) as { woken: string[] }).toEqual({ woken: [] });
    expect((await orders.handler({ waymark: "watchdog" }, lambdaContext())) as { woken: string[] }).toEqual({ woken: [] });
    await advance(ORPHANS_AFTER_MS);
    expect(await refunds.handler({ waymark: "watchdog" }, lambdaContext())).toEqual({ woken: [] });
    expect(await orders.handler({ waymark: "watchdog" }, lambdaContext())).toEqual({ woken: ["gone-1"] });
    await orders.mapping().runUntil(async () => orders.lines("unhosted", "gone-1").length > 0, { what: "gone-1 to be reported" });
    expect(await orders.run("gone-1")).toMatchObject({ status: "suspended", waitingFor: "workflow-not-hosted:gone-flow:1" });
  });

  it("a signal sent through the function that does not host the run is refused, and nothing is written", async () => {
    await refunds.client.start("steps-flow", { runId: "refund-3", input: { steps: 1, nap: "5m" } });
    await refunds.mapping().runUntil(async () => (await refunds.run("refund-3")).status === "suspended", { what: "refund-3 to sleep" });
    const before = await refunds.store.loadJournal("refund-3");
    const sentBefore = orders.sent.length;
    await expect(orders.client.signal("refund-3", "approval", { ok: true })).rejects.toBeInstanceOf(UnknownWorkflowError);
    expect(await refunds.store.loadJournal("refund-3")).toEqual(before);
    expect(orders.sent.length).toBe(sentBefore);
  });
});
