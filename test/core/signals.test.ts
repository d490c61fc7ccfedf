import { describe, expect, it } from "vitest";
import { durable, InvalidInputError, RunNotFoundError, UnknownSignalError, WaitResolvedError, WaitNotFoundError, RunFinishedError } from "waymark";
import { createTestRuntime } from "waymark/testing";
import { Approval, Empty } from "./helpers.ts";

const approvalFlow = durable({ name: "approval-flow", input: Empty, signals: { approval: Approval } }, async (_in, step) => {
  await step.run("before", () => "x");
  const decision = await step.waitForSignal("approval", { timeout: "24h" });
  await step.sleep("cool-off", "1h");
  if (!decision.received) return { outcome: "timed-out" };
  return { outcome: decision.payload.approved ? "approved" : "rejected", by: decision.payload.approver };
});

async function waiting(runId = "a1") {
  const rt = createTestRuntime({ workflows: [approvalFlow] });
  await rt.start(approvalFlow, { runId, input: {} });
  return rt;
}

describe("waitForSignal", () => {
  it("suspends until the signal arrives, then resumes with its payload", async () => {
    const rt = await waiting();
    const run = await rt.get("a1");
    expect(run).toMatchObject({ status: "suspended", waitingFor: "signal:approval" });
    const receipt = await rt.signal("a1", "approval", { approved: true, approver: "ana" });
    expect(receipt).toMatchObject({ status: "delivered", waitId: "approval" });
    await rt.advance("1h");
    expect((await rt.get("a1")).result).toEqual({ outcome: "approved", by: "ana" });
  });

  it("resolves to { received: false } when the timeout passes first", async () => {
    const rt = await waiting();
    await rt.advance("23h");
    expect((await rt.get("a1")).status).toBe("suspended");
    await rt.advance("2h");
    expect((await rt.get("a1")).result).toEqual({ outcome: "timed-out" });
  });

  it("buffers a signal that arrives before the wait", async () => {
    const wf = durable({ name: "early", input: Empty, signals: { go: Approval } }, async (_in, step) => {
      await step.sleep("first", "1h");
      const s = await step.waitForSignal("go");
      return s.received ? s.payload.approver : "none";
    });
    const rt = createTestRuntime({ workflows: [wf] });
    await rt.start(wf, { runId: "e1", input: {} });
    expect(await rt.signal("e1", "go", { approved: true, approver: "early-bird" })).toMatchObject({ status: "buffered" });
    await rt.advance("1h");
    expect((await rt.get("e1")).result).toBe("early-bird");
  });

  it("consumes buffered signals in arrival order, one per wait", async () => {
    const wf = durable({ name: "queue", input: Empty, signals: { item: Approval } }, async (_in, step) => {
      await step.sleep("first", "1h");
      const out: string[] = [];
      for (let i = 0; i < 3; i++) {
        const s = await step.waitForSignal("item");
        if (s.received) out.push(s.payload.approver);
      }
      return out;
    });
    const rt = createTestRuntime({ workflows: [wf] });
    await rt.start(wf, { runId: "q1", input: {} });
    await rt.signal("q1", "item", { approved: true, approver: "one" });
    rt.clock.advance(1);
    await rt.signal("q1", "item", { approved: true, approver: "two" });
    await rt.advance("1h");
    expect((await rt.get("q1")).status).toBe("suspended");
    await rt.signal("q1", "item", { approved: true, approver: "three" });
    expect((await rt.get("q1")).result).toEqual(["one", "two", "three"]);
  });

  it("treats a repeated signal id as one delivery", async () => {
    const rt = await waiting();
    const first = await rt.signal("a1", "approval", { approved: true, approver: "ana" }, { signalId: "hook-1" });
    const again = await rt.signal("a1", "approval", { approved: true, approver: "ana" }, { signalId: "hook-1" });
    expect(again).toEqual(first);
    await rt.advance("1h");
    expect(await rt.signal("a1", "approval", { approved: true, approver: "ana" }, { signalId: "hook-1" })).toEqual(first);
    const signals = (await rt.history("a1")).filter((e) => e.record?.type === "signal");
    expect(signals).toHaveLength(1);
  });

  it("rejects a signal after the timeout won, keeping it as a late event with the decision", async () => {
    const rt = await waiting();
    await rt.advance("24h");
    const err = await rt.signal("a1", "approval", { approved: true, approver: "late" }, { waitId: "approval" }).catch((e) => e);
    expect(err).toBeInstanceOf(WaitResolvedError);
    expect((err as WaitResolvedError).decision.via).toBe("timeout");
    // Targeted at a wait already decided: refused before anything was written.
    expect((await rt.history("a1")).filter((e) => e.record?.type === "signal")).toHaveLength(0);
  });

  it("refuses a signal to a run that has finished", async () => {
    const rt = await waiting();
    await rt.signal("a1", "approval", { approved: false, approver: "first" });
    await rt.advance("1h");
    await expect(rt.signal("a1", "approval", { approved: true, approver: "second" })).rejects.toBeInstanceOf(RunFinishedError);
  });

  it("validates payloads against the declared schema before writing anything", async () => {
    const rt = await waiting();
    const before = await rt.history("a1");
    const err = await rt.signal("a1", "approval", { approved: "yes" }).catch((e) => e);
    expect(err).toBeInstanceOf(InvalidInputError);
    expect((err as InvalidInputError).issues.map((i) => i.path)).toEqual(["approved", "approver"]);
    expect(await rt.history("a1")).toEqual(before);
  });

  it("refuses unknown runs, undeclared signals and unknown waits without writing", async () => {
    const rt = await waiting();
    const before = await rt.history("a1");
    await expect(rt.signal("nope", "approval", { approved: true, approver: "a" })).rejects.toBeInstanceOf(RunNotFoundError);
    await expect(rt.signal("a1", "refund", {})).rejects.toBeInstanceOf(UnknownSignalError);
    await expect(rt.signal("a1", "approval", { approved: true, approver: "a" }, { waitId: "approval#7" })).rejects.toBeInstanceOf(WaitNotFoundError);
    expect(await rt.history("a1")).toEqual(before);
  });

  it("resolves a wait exactly once when a signal and the timeout race", async () => {
    const rt = await waiting();
    rt.clock.advance(24 * 3600_000);
    // The timeout wake is due and a signal arrives at the same instant.
    const [signal] = await Promise.allSettled([rt.client.signal("a1", "approval", { approved: true, approver: "ana" }), rt.settle()]);
    await rt.advance("1h");
    const resolutions = (await rt.history("a1")).filter((e) => e.record?.type === "resolution");
    expect(resolutions).toHaveLength(1);
    const via = resolutions[0]?.record?.type === "resolution" ? resolutions[0].record.via : undefined;
    const run = await rt.get("a1");
    if (via === "signal") {
      expect(signal.status).toBe("fulfilled");
      expect(run.result).toEqual({ outcome: "approved", by: "ana" });
    } else {
      expect(signal.status === "rejected" && signal.reason).toBeInstanceOf(WaitResolvedError);
      expect(run.result).toEqual({ outcome: "timed-out" });
    }
  });
});
