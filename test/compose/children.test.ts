/**
 * Issue 11, item 1: child workflows. `step.invoke` starts a child run (idempotently, with an id
 * derived from the parent's run and step) and waits for it without polling: the child's end is
 * delivered to the parent as a signal that wakes it. `step.start` starts one and goes on.
 * Cancelling the parent cancels a child it waits for. On the testing runtime and on a real SQLite
 * journal with the local runtime.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { ChildFailedError, durable, NonRetryableError } from "waymark";
import { createTestRuntime } from "waymark/testing";
import { createLocalRuntime } from "waymark/local";
import { Approval, Counter } from "../core/helpers.ts";
import { sqliteLab } from "../support/sqlite-lab.ts";

const calls = new Counter();
const payment = durable({ name: "payment", input: z.object({ amount: z.number() }) }, async ({ amount }, step) => {
  await step.sleep("settle", "1h");
  if (amount < 0) await step.run("refuse", () => {
    throw new NonRetryableError("negative amount");
  });
  return step.run("capture", ({ idempotencyKey }) => (calls.hit(idempotencyKey), `ch-${amount}`));
});
const audit = durable({ name: "audit", input: z.object({ orderId: z.string() }) }, async ({ orderId }, step) => step.run("log", () => `audited ${orderId}`));
const order = durable({ name: "order-with-child", input: z.object({ amount: z.number() }) }, async ({ amount }, step) => {
  const { runId: auditId } = await step.start("audit", audit, { input: { orderId: step.runId } });
  try {
    const charge = await step.invoke("pay", payment, { input: { amount } });
    return { charge, auditId };
  } catch (err) {
    if (err instanceof ChildFailedError) return { failed: err.failure.message, child: err.childRunId };
    throw err;
  }
});

describe("step.invoke and step.start", () => {
  it("the parent waits (suspended, no polling) and gets the child's result when the child ends", async () => {
    const rt = createTestRuntime({ workflows: [order, payment, audit] });
    await rt.start(order, { runId: "o1", input: { amount: 42 } });
    expect(await rt.get("o1")).toMatchObject({ status: "suspended", waitingFor: "signal:__child" });
    expect(await rt.get("o1:pay")).toMatchObject({ status: "suspended", waitingFor: "sleep:settle" });
    expect(await rt.get("o1:audit")).toMatchObject({ status: "completed", result: "audited o1" });
    const parentInvocations = rt.invocations.filter((i) => i.runId === "o1").length;
    await rt.advance("1h");
    expect(await rt.get("o1")).toMatchObject({ status: "completed", result: { charge: "ch-42", auditId: "o1:audit" } });
    // Woken once by the child's end, not by a poll.
    expect(rt.invocations.filter((i) => i.runId === "o1").length).toBe(parentInvocations + 1);
    expect(calls.count("o1:pay/capture")).toBe(1);
  });

  it("a child's failure is the parent's ChildFailedError", async () => {
    const rt = createTestRuntime({ workflows: [order, payment, audit] });
    await rt.start(order, { runId: "o2", input: { amount: -1 } });
    await rt.advance("1h");
    expect(await rt.get("o2")).toMatchObject({ status: "completed", result: { child: "o2:pay" } });
    expect(((await rt.get("o2")).result as { failed: string }).failed).toMatch(/negative amount/);
  });

  it("cancelling the parent while it waits cancels the child", async () => {
    const slow = durable({ name: "slow-child", input: z.object({}), signals: { approval: Approval } }, async (_in, step) => {
      await step.waitForSignal("approval");
      return "approved";
    });
    const parent = durable({ name: "parent-of-slow", input: z.object({}) }, async (_in, step) => step.invoke("child", slow, { input: {} }));
    const rt = createTestRuntime({ workflows: [parent, slow] });
    await rt.start(parent, { runId: "p1", input: {} });
    expect((await rt.client.cancel("p1", { reason: "stop" })).outcome).toBe("requested");
    await rt.settle();
    expect(await rt.get("p1")).toMatchObject({ status: "cancelled" });
    expect(await rt.get("p1:child")).toMatchObject({ status: "cancelled", error: { name: "CancelledError" } });
  });

  it("on the local runtime (real SQLite file): the child's end wakes the parent", async () => {
    const quickPay = durable({ name: "quick-pay", input: z.object({ amount: z.number() }) }, async ({ amount }, step) => step.run("capture", () => `ch-${amount}`));
    const parent = durable({ name: "local-parent", input: z.object({}) }, async (_in, step) => step.invoke("pay", quickPay, { input: { amount: 7 } }));
    const rt = createLocalRuntime({ workflows: [parent, quickPay], file: join(mkdtempSync(join(tmpdir(), "waymark-children-")), "j.db") });
    rt.start();
    try {
      await rt.client.start(parent, { runId: "lp1", input: {} });
      expect(await rt.waitForRun("lp1", { timeoutMs: 120_000 })).toMatchObject({ status: "completed", result: "ch-7" });
      expect((await rt.client.get("lp1:pay")).status).toBe("completed");
    } finally {
      await rt.close();
    }
  });
});

describe("a child cancelled before its first invocation", () => {
  const slowChild = durable({ name: "slow-child", input: z.object({}) }, async (_in, step) => step.run("work", ({ idempotencyKey }) => calls.hit(idempotencyKey)));
  const waitingParent = durable({ name: "waiting-parent", input: z.object({}) }, async (_in, step) => {
    try {
      return await step.invoke("child", slowChild, { input: {} });
    } catch (err) {
      return { childEnded: (err as { status?: string }).status };
    }
  });

  it("ends cancelled in that invocation and tells its parent, which gets ChildFailedError (before: ended at once, the parent waited for ever)", async () => {
    const lab = sqliteLab([waitingParent, slowChild]);
    await lab.client().start(waitingParent, { runId: "wp", input: {} });
    expect(await lab.engine("w").invoke("wp")).toMatchObject({ status: "suspended", waitingFor: "signal:__child" });
    expect(await lab.store.getRun("wp:child")).toMatchObject({ status: "pending", invocations: 0 });
    expect((await lab.client().cancel("wp:child", { reason: "not needed" })).outcome).toBe("requested");
    await lab.engine("w").invoke("wp:child");
    expect(await lab.store.getRun("wp:child")).toMatchObject({ status: "cancelled", error: { name: "CancelledError" } });
    expect(calls.count("wp:child/work")).toBe(0);
    expect(await lab.engine("w").invoke("wp")).toEqual({ status: "completed", result: { childEnded: "cancelled" } });
    lab.close();
  });
});
