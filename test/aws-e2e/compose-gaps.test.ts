/**
 * Where cancellation meets the other compositions on the AWS runtime (real handler, DynamoDB
 * Local, SQS emulator; Scheduler STAND-IN): a cancel that lands during an incarnation which ends
 * in continueAsNew, the timeout schedule of a wait that the cancellation decided, and a parent's
 * cancellation reaching the child it waits for before the invocation returns.
 */
import { setTimeout as delay } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { peers } from "./endpoints.ts";
import { type E2e, createE2e } from "./harness.ts";
import { BodyProbe, composeWorkflows } from "./workflows.ts";

let e2e: E2e;
beforeAll(async () => {
  const probe = new BodyProbe();
  e2e = await createE2e({ endpoints: peers(), workflows: (ledger) => composeWorkflows(ledger, probe).all });
});
afterAll(() => e2e.close());

describe("a cancel requested during an incarnation that ends in continueAsNew", () => {
  it("is not lost at the switch: the run ends cancelled instead of running its next incarnations", async () => {
    const runId = "paged-cancel-1";
    // Five 100 ms steps per incarnation: each incarnation ends well before the first heartbeat
    // (lease 10 s, heartbeat every 3.3 s), so no heartbeat sees the request mid-incarnation.
    await e2e.client.start("paged", { runId, input: { from: 0, to: 15, per: 5, holdMs: 100 } });
    const loop = e2e.mapping();
    const driving = loop.runUntil(e2e.finished([runId]), { what: "the run to end", deadlineMs: 15_000 });
    const began = Date.now();
    while (!e2e.ledger.counts(runId).has(`${runId}/add`) && Date.now() - began < 10_000) await delay(10);
    expect((await e2e.client.cancel(runId, { reason: "stop paging" })).outcome).toBe("requested");
    await driving;

    // The request is journaled in the incarnation the client saw (the first), …
    expect(await e2e.store.getRecord(runId, "cancel")).toMatchObject({ body: { type: "cancel", reason: "stop paging" } });
    // … and must reach the run wherever it went on: delivered at the switch, or carried over to
    // the next incarnation and delivered at its first new step. Never all 15 steps and completed.
    const run = await e2e.run(runId);
    const ran = e2e.ledger.read().filter((x) => x.key.startsWith(runId)).length;
    expect({ status: run.status, reason: run.error?.fields?.reason, stepsRun: ran, incarnation: run.incarnation }).toMatchObject({ status: "cancelled", reason: "stop paging" });
    expect(ran).toBeLessThan(15);
  });
});

describe("a wait decided by the cancellation", () => {
  it("has its timeout schedule deleted, as a wait decided by a signal does", async () => {
    const runId = "cancel-schedule-1";
    await e2e.client.start("approval-saga", { runId, input: { sku: "lamp" } });
    const loop = e2e.mapping();
    await loop.runUntil(async () => (await e2e.run(runId)).waitingFor === "signal:approval", { what: "suspended on the approval" });
    const ofRun = () => [...e2e.scheduler.schedules.values()].filter((s) => JSON.parse(s.input.Target?.Input ?? "{}").runId === runId);
    expect(ofRun().map((s) => JSON.parse(s.input.Target?.Input ?? "{}").key)).toEqual(["timeout:approval"]);

    await e2e.client.cancel(runId, { reason: "withdrawn" });
    await loop.runUntil(e2e.finished([runId]), { what: "the run to end" });
    expect((await e2e.run(runId)).status).toBe("cancelled");
    expect(ofRun(), "the 24 h timeout schedule of a wait already decided").toEqual([]);
  });
});

describe("cancelling a parent that waits for its child", () => {
  it("the child's cancellation is written before the invocation that cancelled the parent returns", async () => {
    const runId = "parent-cancel-1";
    const childId = `${runId}:child`;
    await e2e.client.start("parent-of-approval", { runId, input: {} });
    const loop = e2e.mapping();
    await loop.runUntil(async () => (await e2e.run(runId)).waitingFor === "signal:__child" && (await e2e.store.getRun(childId))?.waitingFor === "signal:approval", {
      what: "parent and child suspended",
    });

    // The child's cancel record takes 800 ms to write (a slow network): an invocation that
    // returns before it is written leaves it to a frozen Lambda sandbox that may never thaw.
    e2e.clients.dynamodb.middlewareStack.add(
      (next) => async (args) => {
        const item = (args.input as { Item?: { pk?: { S?: string }; sk?: { S?: string } } }).Item;
        if (item?.pk?.S === `run#${childId}` && item.sk?.S === "cancel") await delay(800);
        return next(args);
      },
      { step: "initialize", name: "slowChildCancel" },
    );
    try {
      await e2e.client.cancel(runId, { reason: "order withdrawn" });
      await loop.runUntil(e2e.finished([runId]), { what: "the parent to end" });
      expect((await e2e.run(runId)).status).toBe("cancelled");
      // The handler has returned (the loop checks between invocations).
      expect(await e2e.store.getRecord(childId, "cancel"), "the child's cancel record when the handler returned").toBeDefined();
    } finally {
      e2e.clients.dynamodb.middlewareStack.remove("slowChildCancel");
      // In this process the un-awaited write does finish: the child ends cancelled eventually.
      await loop.runUntil(e2e.finished([childId]), { what: "the child to end", deadlineMs: 10_000 });
    }
    expect(await e2e.run(childId)).toMatchObject({ status: "cancelled", error: { name: "CancelledError" } });
  });
});
