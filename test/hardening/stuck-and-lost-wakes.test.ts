/**
 * Issue 8, items 1 (the worker side), 5 and 6 on the local runtime (real SQLite file, its own
 * pool and watchdog): one stuck run never holds the others back; a signal whose only wake was
 * lost is still delivered; a run of a workflow nobody hosts backs off instead of spinning.
 */
import { afterEach, describe, expect, it } from "vitest";
import { durable, type InvocationResult, type Wake, type WakeQueue } from "waymark";
import { createLocalRuntime, type LocalRuntime } from "waymark/local";
import { until } from "../support/until.ts";
import { type SqliteLab, sqliteLab } from "../support/sqlite-lab.ts";
import { Approval, Empty } from "../core/helpers.ts";

let lab: SqliteLab | undefined;
let rt: LocalRuntime | undefined;
afterEach(async () => {
  await rt?.close();
  rt = undefined;
  lab?.close();
  lab = undefined;
});

describe("item 1: one stuck run and the local runtime", () => {
  it("a step body that never returns holds one slot until its deadline; every other run completes meanwhile", async () => {
    let release: () => void = () => {};
    const hung = new Promise<void>((resolve) => (release = resolve));
    const stuck = durable({ name: "stuck", input: Empty }, async (_in, step) => step.run("hang", () => hung.then(() => "late")));
    const quick = durable({ name: "quick", input: Empty }, async (_in, step) => step.run("one", () => 1));
    lab = sqliteLab([stuck, quick]);
    const results: Array<[string, InvocationResult]> = [];
    rt = createLocalRuntime({ workflows: [stuck, quick], file: lab.file, concurrency: 2, maxInvocationMs: 1_500, leaseTtlMs: 2_000, onInvocation: (id, r) => results.push([id, r]) });
    rt.start();
    await rt.client.start(stuck, { runId: "stuck-1", input: {} });
    await until("the stuck run to be running", async () => (await rt?.client.get("stuck-1"))?.status === "running");
    for (let i = 1; i <= 6; i++) await rt.client.start(quick, { runId: `quick-${i}`, input: {} });
    for (let i = 1; i <= 6; i++) expect((await rt.waitForRun(`quick-${i}`, { timeoutMs: 5_000 })).status).toBe("completed");
    // The stuck invocation gives the run up at its deadline instead of renewing its lease for ever.
    await until("the stuck invocation to be abandoned", () => results.some(([id, r]) => id === "stuck-1" && r.status === "abandoned"));
    release();
    expect((await rt.waitForRun("stuck-1", { timeoutMs: 10_000 })).status).toBe("completed");
  });
});

describe("item 5: a signal whose only wake could not be sent", () => {
  it("is still delivered: the run was marked due first, and the watchdog wakes it", async () => {
    const flow = durable({ name: "approve", input: Empty, signals: { approval: Approval } }, async (_in, step) => {
      const a = await step.waitForSignal("approval"); // no timeout: only the signal can move it
      return a.received ? a.payload.approver : "none";
    });
    lab = sqliteLab([flow]);
    rt = createLocalRuntime({ workflows: [flow], file: lab.file, watchdogIntervalMs: 100 });
    rt.start();
    await rt.client.start(flow, { runId: "w5", input: {} });
    await until("the run to wait for approval", async () => (await rt?.client.get("w5"))?.waitingFor === "signal:approval");
    expect((await rt.client.get("w5")).wakeAt).toBeUndefined();
    const down: WakeQueue = {
      schedule: async (_wake: Wake) => {
        throw Object.assign(new Error("queue unavailable"), { name: "ServiceUnavailable" });
      },
      cancel: async () => {},
    };
    const client = lab.client(undefined, down);
    await expect(client.signal("w5", "approval", { approved: true, approver: "ana" }, { signalId: "s-5" })).rejects.toThrow("queue unavailable");
    expect((await rt.waitForRun("w5", { timeoutMs: 10_000 })).result).toBe("ana");
  });
});
