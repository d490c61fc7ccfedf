/**
 * Issue 8, items 2-4: a store write that was applied but whose response was lost. The fault is
 * injected by {@link LostResponseStore} between the engine (or client) and a real SQLite journal:
 * "retry" re-sends the request as the AWS SDK does, "throw" hands the caller a transient error.
 * Either way the caller must recognise its own write, never treat it as someone else's.
 */
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { durable } from "waymark";
import { LostResponseStore, type LostResponseMode } from "../support/lost-response-store.ts";
import { type SqliteLab, sqliteLab } from "../support/sqlite-lab.ts";
import { Approval, Counter, Empty } from "../core/helpers.ts";

const charges = new Counter();
const approvalFlow = durable({ name: "approve-then-charge", input: Empty, signals: { approval: Approval } }, async (_in, step) => {
  const approval = await step.waitForSignal("approval", { timeout: "24h" });
  if (!approval.received) return "timed out";
  return step.run("charge", ({ idempotencyKey }) => charges.hit(idempotencyKey));
});
const napFlow = durable({ name: "nap", input: Empty }, async (_in, step) => {
  await step.sleep("nap", "1h");
  return "rested";
});
const chargeFlow = durable({ name: "charge", input: z.object({}).strict() }, async (_in, step) =>
  step.run("charge", ({ idempotencyKey }) => charges.hit(idempotencyKey)),
);

let lab: SqliteLab;
afterEach(() => lab?.close());

const modes: LostResponseMode[] = ["retry", "throw"];

describe("item 2: the signal's resolution write loses its response", () => {
  it("retry: the client sees its own resolution as written, wakes the run and cancels its timeout", async () => {
    lab = sqliteLab([approvalFlow]);
    await lab.client().start(approvalFlow, { runId: "r2", input: {} });
    expect(await lab.engine("w").invoke("r2")).toMatchObject({ status: "suspended", waitingFor: "signal:approval" });
    for (const w of await lab.wakes.claimDue(lab.clock.now(), 10, 1_000)) await lab.wakes.ack(w); // the start wake, handled
    expect(await lab.wakes.nextDueAt()).toBe(lab.clock.now() + 24 * 3_600_000); // only the timeout is pending
    const lossy = new LostResponseStore(lab.store).lose("appendRecord", ([, r]) => (r as { key: string }).key.startsWith("resolution#"));

    const receipt = await lab.client(lossy.store).signal("r2", "approval", { approved: true, approver: "ana" }, { signalId: "sig-1" });
    expect(lossy.fired).toEqual(["appendRecord"]);
    expect(receipt).toEqual({ signalId: "sig-1", status: "delivered", waitId: "approval" });
    // Woken now (not in 24 h), and the timeout is gone.
    expect(lab.scheduled.at(-1)).toMatchObject({ runId: "r2", reason: "signal", at: lab.clock.now() });
    const due = await lab.wakes.claimDue(lab.clock.now(), 10, 1_000);
    expect(due.map((w) => w.key)).toEqual(["signal"]);
    for (const w of due) await lab.wakes.ack(w);
    expect(await lab.wakes.nextDueAt()).toBeUndefined();
    expect(await lab.engine("w").invoke("r2")).toEqual({ status: "completed", result: 1 });
  });

  it("throw: the sender's retry of the same signal id is answered delivered and sends the wake", async () => {
    lab = sqliteLab([approvalFlow]);
    await lab.client().start(approvalFlow, { runId: "r2t", input: {} });
    await lab.engine("w").invoke("r2t");
    const lossy = new LostResponseStore(lab.store).lose("appendRecord", ([, r]) => (r as { key: string }).key.startsWith("resolution#"), "throw");
    await expect(lab.client(lossy.store).signal("r2t", "approval", { approved: true, approver: "ana" }, { signalId: "sig-1" })).rejects.toThrow(/response was lost/);
    const receipt = await lab.client().signal("r2t", "approval", { approved: true, approver: "ana" }, { signalId: "sig-1" });
    expect(receipt.status).toBe("delivered");
    expect(lab.scheduled.at(-1)).toMatchObject({ runId: "r2t", reason: "signal" });
    expect(await lab.engine("w").invoke("r2t")).toEqual({ status: "completed", result: 1 });
  });
});

describe("item 3: the lease release of a sleep loses its response", () => {
  for (const mode of modes) {
    it(`${mode}: the invocation still schedules the sleep's wake and reports suspended`, async () => {
      lab = sqliteLab([napFlow]);
      await lab.client().start(napFlow, { runId: `r3-${mode}`, input: {} });
      const lossy = new LostResponseStore(lab.store).lose("releaseLease", () => true, mode);
      const result = await lab.engine("w", lossy.store).invoke(`r3-${mode}`);
      expect(lossy.fired).toEqual(["releaseLease"]);
      expect(result).toEqual({ status: "suspended", wakeAt: lab.clock.now() + 3_600_000, waitingFor: "sleep:nap" });
      expect(lab.scheduled.map((w) => [w.reason, w.key, w.at])).toContainEqual(["sleep", "sleep:nap", lab.clock.now() + 3_600_000]);
      expect(await lab.store.getRun(`r3-${mode}`)).toMatchObject({ status: "suspended", wakeAt: lab.clock.now() + 3_600_000 });
    });
  }
});

describe("item 4: the lease grant loses its response", () => {
  for (const mode of modes) {
    it(`${mode}: the invocation recognises the grant as its own and runs the run (not "busy")`, async () => {
      lab = sqliteLab([chargeFlow]);
      await lab.client().start(chargeFlow, { runId: `r4-${mode}`, input: {} });
      const lossy = new LostResponseStore(lab.store).lose("acquireLease", () => true, mode);
      expect(await lab.engine("w", lossy.store).invoke(`r4-${mode}`)).toEqual({ status: "completed", result: 1 });
      expect(lossy.fired).toEqual(["acquireLease"]);
      expect(await lab.store.getRun(`r4-${mode}`)).toMatchObject({ status: "completed", invocations: 1 });
    });
  }
});

describe("a step record's append loses its response", () => {
  for (const mode of modes) {
    it(`${mode}: the record is read back as ours; the body ran once and the run completes in the same invocation`, async () => {
      lab = sqliteLab([chargeFlow]);
      const runId = `ra-${mode}`;
      await lab.client().start(chargeFlow, { runId, input: {} });
      const before = charges.count(`${runId}/charge`);
      const lossy = new LostResponseStore(lab.store).lose("appendRecord", ([, r]) => (r as { key: string }).key === "step#charge", mode);
      expect(await lab.engine("w", lossy.store).invoke(runId)).toEqual({ status: "completed", result: 1 });
      expect(charges.count(`${runId}/charge`) - before).toBe(1);
    });
  }
});

describe("a finish loses its response", () => {
  it("retry: the run is completed, and the invocation says so (not lost-lease)", async () => {
    lab = sqliteLab([chargeFlow]);
    await lab.client().start(chargeFlow, { runId: "rf", input: {} });
    const lossy = new LostResponseStore(lab.store).lose("finishRun");
    expect(await lab.engine("w", lossy.store).invoke("rf")).toEqual({ status: "completed", result: 1 });
  });
});

describe("starting a child: the child's run is created and the answer is lost", () => {
  const payChild = durable({ name: "pay-child", input: z.object({ cents: z.number() }) }, async ({ cents }, step) => step.run("capture", ({ idempotencyKey }) => (charges.hit(idempotencyKey), `ch-${cents}`)));
  const payParent = durable({ name: "pay-parent", input: Empty }, async (_in, step) => step.invoke("pay", payChild, { input: { cents: 7 } }));

  it("throw: the start step is retried (the start is idempotent), the parent completes, one child run, one capture", async () => {
    lab = sqliteLab([payParent, payChild]);
    await lab.client().start(payParent, { runId: "p1", input: {} });
    const lossy = new LostResponseStore(lab.store).lose("createRun", ([r]) => (r as { runId: string }).runId === "p1:pay", "throw");
    const first = await lab.engine("w", lossy.store).invoke("p1");
    expect(lossy.fired).toEqual(["createRun"]);
    // Before: the one attempt failed and with it the parent. Now: a retry is scheduled.
    expect(first.status).toBe("suspended");
    lab.clock.advance(10_000);
    expect(await lab.engine("w").invoke("p1")).toMatchObject({ status: "suspended", waitingFor: "signal:__child" });
    expect(await lab.engine("w").invoke("p1:pay")).toEqual({ status: "completed", result: "ch-7" });
    expect(await lab.engine("w").invoke("p1")).toEqual({ status: "completed", result: "ch-7" });
    expect(charges.count("p1:pay/capture")).toBe(1);
    expect((await lab.client().list({})).runs.map((r) => r.runId).sort()).toEqual(["p1", "p1:pay"]);
  });
});
