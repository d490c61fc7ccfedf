/**
 * Regression: a run whose wait handed out a link (`<waitId>:notify`) must replay past the
 * decided wait. Before the fix, replay never reached the notify step again and the run failed
 * with a NonDeterminismError right after the approval.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { durable, SignalConflictError, UnknownSignalError } from "waymark";
import { createTestRuntime } from "waymark/testing";
import { Approval, SECRET, sentLinks, twoApprovals } from "./helpers.ts";

describe("waitForSignal({ notify }) on replay", () => {
  it("resumes past decided waits whose links were sent, through two approvals and a restart of the code", async () => {
    const rt = createTestRuntime({ workflows: [twoApprovals], webhook: { secret: SECRET } });
    await rt.start(twoApprovals, { runId: "n-1", input: {} });
    await rt.signal("n-1", "approval", { approved: true, approver: "one" }, { waitId: "approval" });
    expect(await rt.get("n-1")).toMatchObject({ status: "suspended", waitingFor: "signal:approval" });
    expect(sentLinks.get("n-1")?.map((l) => l.waitId)).toEqual(["approval", "approval#2"]);
    await rt.signal("n-1", "approval", { approved: true, approver: "two" }, { waitId: "approval#2" });
    expect(await rt.get("n-1")).toMatchObject({ status: "completed", result: { first: "one", second: "two" } });
    const steps = (await rt.history("n-1")).flatMap((e) => (e.record?.type === "step" ? [e.record.stepId] : []));
    expect(steps.sort()).toEqual(["approval", "approval#2", "approval#2:notify", "approval:notify"]);
  });

  it("fails clearly when a wait asks for a link on a runtime without a webhook secret", async () => {
    const rt = createTestRuntime({ workflows: [twoApprovals] });
    await rt.start(twoApprovals, { runId: "n-2", input: {} });
    expect(await rt.get("n-2")).toMatchObject({ status: "failed", error: { name: "WorkflowDefinitionError" } });
  });
});

describe("a retried signal id on a finished run", () => {
  it("is answered as before when it is the same delivery, and is a conflict with another payload", async () => {
    const rt = createTestRuntime({ workflows: [twoApprovals], webhook: { secret: SECRET } });
    await rt.start(twoApprovals, { runId: "n-3", input: {} });
    await rt.signal("n-3", "approval", { approved: true, approver: "one" }, { signalId: "s-1" });
    await rt.signal("n-3", "approval", { approved: true, approver: "two" }, { signalId: "s-2" });
    expect((await rt.get("n-3")).status).toBe("completed");
    expect(await rt.signal("n-3", "approval", { approved: true, approver: "two" }, { signalId: "s-2" })).toEqual({ signalId: "s-2", status: "delivered", waitId: "approval#2" });
    await expect(rt.signal("n-3", "approval", { approved: false, approver: "two" }, { signalId: "s-2" })).rejects.toBeInstanceOf(SignalConflictError);
  });
});

describe("a link that could not be sent", () => {
  it("fails its wait for good: a signal that arrives later does not change what replay sees", async () => {
    const wf = durable({ name: "notify-fails", input: z.object({}), signals: { approval: Approval }, retries: 1 }, async (_in, step) => {
      try {
        await step.waitForSignal("approval", { timeout: "1h", notify: () => { throw new Error("mail server down"); } });
        return "approved";
      } catch {
        await step.run("fallback", () => "escalated");
        await step.sleep("cool-off", "1m");
        return "fallback";
      }
    });
    const rt = createTestRuntime({ workflows: [wf], webhook: { secret: SECRET } });
    await rt.start(wf, { runId: "nf-1", input: {} });
    // The wait record exists without a resolution, so a signal can still land on it.
    await rt.signal("nf-1", "approval", { approved: true, approver: "late" }, { waitId: "approval" }).catch(() => undefined);
    await rt.advance("1m");
    expect(await rt.get("nf-1")).toMatchObject({ status: "completed", result: "fallback" });
  });
});

describe("signal names that are Object.prototype's own", () => {
  it("are unknown signals (a clear 4xx), not a crash", async () => {
    const rt = createTestRuntime({ workflows: [twoApprovals], webhook: { secret: SECRET } });
    await rt.start(twoApprovals, { runId: "proto-1", input: {} });
    for (const name of ["constructor", "toString", "__proto__"]) {
      await expect(rt.signal("proto-1", name, {})).rejects.toBeInstanceOf(UnknownSignalError);
    }
  });
});
