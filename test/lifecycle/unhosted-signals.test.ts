/**
 * Issue 20 item 8: a signal for a run whose workflow version this process does not host (the
 * run waits for a deploy that does) is buffered, not refused with `UnknownWorkflowError`. Its
 * schema is not here, so the payload is accepted unchecked (still JSON, within the size limit)
 * when a hosted version of the workflow declares the signal's name; the run's own version checks
 * it when its wait takes it. And an unknown workflow's error names the workflows hosted.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { Client, createRegistry, durable, InvalidInputError, UnknownSignalError, UnknownWorkflowError } from "waymark";
import { createTestRuntime, type TestRuntime } from "waymark/testing";
import { Approval, Empty } from "../core/helpers.ts";

const v1 = durable({ name: "order", input: Empty, signals: { approval: Approval } }, async (_in, step) => {
  const a = await step.waitForSignal("approval", { timeout: "1d" });
  return a.received ? `approved by ${a.payload.approver}` : "expired";
});
const v2 = durable({ name: "order", version: 2, input: Empty, signals: { approval: Approval, note: z.object({ text: z.string() }) } }, async (_in, step) => {
  const a = await step.waitForSignal("approval", { timeout: "1d" });
  return a.received ? `v2: approved by ${a.payload.approver}` : "expired";
});
const other = durable({ name: "other", input: Empty }, async () => "done");

/** A client of a deploy that hosts `workflows`, on the journal `rt` keeps. */
const deployOf = (rt: TestRuntime, workflows: Parameters<typeof createRegistry>[0]) => new Client({ store: rt.store, wakes: rt.wakes, clock: rt.clock, workflows: createRegistry(workflows) });

async function waitingOnV1(runId: string): Promise<TestRuntime> {
  const rt = createTestRuntime({ workflows: [v1] });
  await rt.start(v1, { runId, input: {} });
  expect((await rt.get(runId)).waitingFor).toBe("signal:approval");
  return rt;
}

describe("a signal to a run of a version no deploy here hosts", () => {
  it("is taken (delivered to its open wait), and the run's version finishes with it", async () => {
    const rt = await waitingOnV1("r-1");
    const v2Only = deployOf(rt, [v2]);
    expect(await v2Only.signal("r-1", "approval", { approved: true, approver: "ana" }, { signalId: "s-1" })).toEqual({ signalId: "s-1", status: "delivered", waitId: "approval" });
    // The same delivery again is the same answer (idempotent by signal id).
    expect(await v2Only.signal("r-1", "approval", { approved: true, approver: "ana" }, { signalId: "s-1" })).toMatchObject({ status: "delivered" });
    await rt.settle(); // a deploy that hosts v1 runs it
    expect(await rt.get("r-1")).toMatchObject({ status: "completed", result: "approved by ana" });
  });

  it("is buffered when the run has not reached its wait, and taken by the wait later", async () => {
    const rt = createTestRuntime({ workflows: [v1] });
    await rt.client.start(v1, { runId: "r-2", input: {} }); // not yet invoked
    expect(await deployOf(rt, [v2]).signal("r-2", "approval", { approved: true, approver: "bo" })).toMatchObject({ status: "buffered" });
    await rt.settle();
    expect(await rt.get("r-2")).toMatchObject({ status: "completed", result: "approved by bo" });
  });

  it("is accepted unchecked (its schema is not here); the run's version checks it when its wait takes it", async () => {
    const rt = await waitingOnV1("r-3");
    await deployOf(rt, [v2]).signal("r-3", "approval", { approved: "yes" });
    await rt.settle();
    const run = await rt.get("r-3");
    expect(run.status).toBe("failed");
    expect(run.error).toMatchObject({ name: "InvalidInputError" });
  });

  it("is still refused, writing nothing, when no hosted version declares the name, when it is not JSON, or when no version of the workflow is hosted", async () => {
    const rt = await waitingOnV1("r-4");
    const before = JSON.stringify(await rt.history("r-4"));
    await expect(deployOf(rt, [v2]).signal("r-4", "aproval", { approved: true, approver: "ana" })).rejects.toBeInstanceOf(UnknownSignalError);
    await expect(deployOf(rt, [v2]).signal("r-4", "approval", { approved: true, approver: "ana", at: new Date() })).rejects.toThrow();
    const elsewhere = await deployOf(rt, [other]).signal("r-4", "approval", { approved: true, approver: "ana" }).catch((e: unknown) => e);
    expect(elsewhere).toBeInstanceOf(UnknownWorkflowError);
    expect((elsewhere as Error).message).toBe('no workflow named "order" is registered here; hosted here: other');
    expect(JSON.stringify(await rt.history("r-4"))).toBe(before);
  });

  it("is checked against the schema as before when the run's own version is hosted", async () => {
    const rt = await waitingOnV1("r-5");
    await expect(deployOf(rt, [v1, v2]).signal("r-5", "approval", { approved: "yes" })).rejects.toBeInstanceOf(InvalidInputError);
  });
});

describe("an unknown workflow's error names the workflows hosted", () => {
  it("client.start by name", async () => {
    const rt = createTestRuntime({ workflows: [v1, v2, other] });
    const err = await rt.client.start("ordr", { runId: "u-1", input: {} }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnknownWorkflowError);
    expect((err as Error).message).toBe('no workflow named "ordr" is registered here; hosted here: order, order@v2, other');
    expect((await rt.client.list()).runs).toEqual([]);
  });
});
