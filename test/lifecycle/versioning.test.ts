/**
 * Issue 10, item 1: changing a workflow while runs are in flight. Each recipe is a simulated
 * deploy on one real SQLite journal: the old code records, the new code (a new registry, the
 * same workflow name) replays. docs/guides/versioning.md ("Changing a workflow while runs are in flight")
 * shows the same recipes.
 */
import { afterEach, describe, expect, it } from "vitest";
import { type AnyWorkflow, createRegistry, durable, Engine } from "waymark";
import { type SqliteLab, sqliteLab } from "../support/sqlite-lab.ts";
import { Approval, Counter, Empty } from "../core/helpers.ts";

let lab: SqliteLab;
afterEach(() => lab?.close());

/** An engine that hosts `workflows` on the lab's journal: a deploy of that code. */
function deploy(workflows: AnyWorkflow[], owner = "deploy"): Engine {
  return new Engine({ store: lab.store, wakes: lab.wakes, clock: lab.clock, workflows: createRegistry(workflows), owner });
}

const signals = { approval: Approval };
const calls = new Counter();

// v1 of the order: reserve, wait for approval, charge.
const before = durable({ name: "order", input: Empty, signals }, async (_in, step) => {
  await step.run("reserve", () => calls.hit(`${step.runId}:reserve`));
  await step.waitForSignal("approval", { timeout: "24h" });
  return step.run("charge", () => calls.hit(`${step.runId}:charge`));
});
// The deploy adds a fraud check before the approval, behind a patch.
const withFraudCheck = durable({ name: "order", input: Empty, signals }, async (_in, step) => {
  await step.run("reserve", () => calls.hit(`${step.runId}:reserve`));
  if (step.patched("fraud-check")) await step.run("fraud_check", () => calls.hit(`${step.runId}:fraud`));
  await step.waitForSignal("approval", { timeout: "24h" });
  return step.run("charge", () => calls.hit(`${step.runId}:charge`));
});
// The same deploy without the patch: what breaks in-flight runs today.
const unguarded = durable({ name: "order", input: Empty, signals }, async (_in, step) => {
  await step.run("reserve", () => calls.hit(`${step.runId}:reserve`));
  await step.run("fraud_check", () => calls.hit(`${step.runId}:fraud`));
  await step.waitForSignal("approval", { timeout: "24h" });
  return step.run("charge", () => calls.hit(`${step.runId}:charge`));
});
// The clean-up release, once no run that took the old path is left.
const deprecated = durable({ name: "order", input: Empty, signals }, async (_in, step) => {
  await step.run("reserve", () => calls.hit(`${step.runId}:reserve`));
  step.deprecatePatch("fraud-check");
  await step.run("fraud_check", () => calls.hit(`${step.runId}:fraud`));
  await step.waitForSignal("approval", { timeout: "24h" });
  return step.run("charge", () => calls.hit(`${step.runId}:charge`));
});

const approve = (runId: string) => lab.client().signal(runId, "approval", { approved: true, approver: "ana" });

describe("add a step: step.patched()", () => {
  it("a run recorded before the patch keeps the old path; a new run takes the new one; replays agree", async () => {
    lab = sqliteLab([before]);
    await lab.client().start(before, { runId: "old-1", input: {} });
    expect(await deploy([before]).invoke("old-1")).toMatchObject({ status: "suspended", waitingFor: "signal:approval" });

    // Deploy: the fraud check behind a patch.
    const engine = deploy([withFraudCheck]);
    await lab.client().start(withFraudCheck, { runId: "new-1", input: {} });
    expect(await engine.invoke("new-1")).toMatchObject({ status: "suspended" });
    expect(calls.count("new-1:fraud")).toBe(1);
    expect(await engine.invoke("old-1")).toMatchObject({ status: "suspended" }); // replays: no fraud check
    await approve("old-1");
    await approve("new-1");
    expect(await engine.invoke("old-1")).toEqual({ status: "completed", result: 1 });
    expect(await engine.invoke("new-1")).toEqual({ status: "completed", result: 1 });
    expect(calls.count("old-1:fraud")).toBe(0);
    expect(calls.count("new-1:fraud")).toBe(1);
  });

  it("without the patch, the old run is broken: the new step runs out of order (the check below catches it before deploy)", async () => {
    lab = sqliteLab([before]);
    await lab.client().start(before, { runId: "old-2", input: {} });
    await deploy([before]).invoke("old-2");
    await approve("old-2");
    // A run that had passed this point: a fraud check would now run after its approval.
    expect(await deploy([unguarded]).invoke("old-2")).toEqual({ status: "completed", result: 1 });
    expect(calls.count("old-2:fraud")).toBe(1);
  });

  it("deprecatePatch: runs that took the new path replay; one that took the old path fails loudly", async () => {
    lab = sqliteLab([before]);
    await lab.client().start(before, { runId: "old-3", input: {} });
    await deploy([before]).invoke("old-3");
    const patchedDeploy = deploy([withFraudCheck]);
    expect(await patchedDeploy.invoke("old-3")).toMatchObject({ status: "suspended" }); // records: old path
    await lab.client().start(withFraudCheck, { runId: "new-3", input: {} });
    await patchedDeploy.invoke("new-3"); // records: new path

    const cleanUp = deploy([deprecated]);
    await approve("new-3");
    expect(await cleanUp.invoke("new-3")).toEqual({ status: "completed", result: 1 });
    await approve("old-3");
    expect(await cleanUp.invoke("old-3")).toMatchObject({ status: "failed", error: { name: "NonDeterminismError", fields: { stepId: "patch:fraud-check" } } });
    expect(calls.count("old-3:fraud")).toBe(0);
  });
});

describe("remove a step", () => {
  it("behind a patch: a run that already did it replays it, new runs skip it", async () => {
    const v1 = durable({ name: "notify", input: Empty }, async (_in, step) => {
      await step.run("sms", () => calls.hit(`${step.runId}:sms`));
      await step.sleep("pause", "1h");
      return step.run("mail", () => calls.hit(`${step.runId}:mail`));
    });
    const v2 = durable({ name: "notify", input: Empty }, async (_in, step) => {
      if (!step.patched("drop-sms")) await step.run("sms", () => calls.hit(`${step.runId}:sms`));
      await step.sleep("pause", "1h");
      return step.run("mail", () => calls.hit(`${step.runId}:mail`));
    });
    lab = sqliteLab([v1]);
    await lab.client().start(v1, { runId: "rm-old", input: {} });
    await deploy([v1]).invoke("rm-old");
    await lab.client().start(v2, { runId: "rm-new", input: {} });
    const engine = deploy([v2]);
    await engine.invoke("rm-new");
    lab.clock.advance(3_600_000);
    expect(await engine.invoke("rm-old")).toEqual({ status: "completed", result: 1 });
    expect(await engine.invoke("rm-new")).toEqual({ status: "completed", result: 1 });
    expect([calls.count("rm-old:sms"), calls.count("rm-new:sms")]).toEqual([1, 0]);
  });
});

describe("change a timeout", () => {
  it("needs nothing: a wait keeps the deadline it recorded; new waits use the new one", async () => {
    const v1 = durable({ name: "wait-t", input: Empty, signals }, async (_in, step) => (await step.waitForSignal("approval", { timeout: "24h" })).received);
    const v2 = durable({ name: "wait-t", input: Empty, signals }, async (_in, step) => (await step.waitForSignal("approval", { timeout: "1h" })).received);
    lab = sqliteLab([v1]);
    await lab.client().start(v1, { runId: "t-old", input: {} });
    const t0 = lab.clock.now();
    expect(await deploy([v1]).invoke("t-old")).toMatchObject({ wakeAt: t0 + 24 * 3_600_000 });
    await lab.client().start(v2, { runId: "t-new", input: {} });
    expect(await deploy([v2]).invoke("t-new")).toMatchObject({ wakeAt: t0 + 3_600_000 });
    lab.clock.advance(2 * 3_600_000);
    expect(await deploy([v2]).invoke("t-old")).toMatchObject({ status: "suspended", wakeAt: t0 + 24 * 3_600_000 });
    expect(await deploy([v2]).invoke("t-new")).toEqual({ status: "completed", result: false });
  });
});

describe("change a schema, or anything else: versions side by side", () => {
  const v1 = durable({ name: "billing", input: Empty }, async (_in, step) => {
    await step.sleep("cycle", "1d");
    return step.run("invoice", () => "v1 invoice");
  });
  const v2 = durable({ name: "billing", version: 2, input: Empty }, async (_in, step) => {
    await step.run("meter", () => "usage");
    await step.sleep("cycle", "1d");
    return step.run("invoice", () => "v2 invoice");
  });

  it("a run stays on the version it started on; new runs start on the newest hosted", async () => {
    lab = sqliteLab([v1, v2]);
    await lab.client().start(v1, { runId: "b-old", input: {} });
    await deploy([v1]).invoke("b-old");
    const both = deploy([v1, v2]);
    const started = await lab.client().start("billing", { runId: "b-new", input: {} });
    expect(started.run.workflow).toBe("billing@v2");
    await both.invoke("b-new");
    lab.clock.advance(86_400_000);
    expect(await both.invoke("b-old")).toEqual({ status: "completed", result: "v1 invoice" });
    expect(await both.invoke("b-new")).toEqual({ status: "completed", result: "v2 invoice" });
  });

  it("a deploy that no longer hosts a run's version reports it (not failed) until one does", async () => {
    lab = sqliteLab([v1, v2]);
    await lab.client().start(v1, { runId: "b-orphan", input: {} });
    await deploy([v1]).invoke("b-orphan");
    lab.clock.advance(86_400_000);
    expect(await deploy([v2]).invoke("b-orphan")).toMatchObject({ status: "unhosted", workflow: "billing" });
    expect(await lab.store.getRun("b-orphan")).toMatchObject({ status: "suspended", waitingFor: "workflow-not-hosted:billing:1" });
    lab.clock.advance(10_000);
    expect(await deploy([v1, v2]).invoke("b-orphan")).toEqual({ status: "completed", result: "v1 invoice" });
  });

  it("two definitions of one name and version are refused", () => {
    expect(() => createRegistry([v2, durable({ name: "billing", version: 2, input: Empty }, async () => 1)])).toThrow(/version 2/);
    expect(() => durable({ name: "billing", version: 0, input: Empty }, async () => 1)).toThrow(/positive integer/);
  });
});
