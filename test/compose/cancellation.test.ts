/**
 * Issue 11, item 3: cancellation that reaches the code. A suspended run is woken and its pending
 * sleep or wait throws CancelledError; a running step's AbortSignal fires and its late result is
 * not recorded as success; compensation steps run; the run ends cancelled with the reason. The
 * whole-run `timeout` takes the same path. On the testing runtime and on a real SQLite journal.
 */
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { CancelledError, durable } from "waymark";
import { createTestRuntime } from "waymark/testing";
import { createLocalRuntime, type LocalRuntime } from "waymark/local";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { until } from "../support/until.ts";
import { Approval, Counter, Empty } from "../core/helpers.ts";

const calls = new Counter();
const orderish = durable({ name: "orderish", input: Empty, signals: { approval: Approval } }, async (_in, step) => {
  const saga = step.saga();
  const hold = await step.run("reserve", ({ idempotencyKey }) => (calls.hit(`reserve:${idempotencyKey}`), "hold-1"));
  saga.add("release", ({ idempotencyKey }) => calls.hit(`release:${idempotencyKey}:${hold}`));
  try {
    await step.waitForSignal("approval", { timeout: "24h" });
    return await step.run("charge", () => calls.hit(`charge:${step.runId}`));
  } catch (err) {
    if (err instanceof CancelledError) await saga.compensate();
    throw err;
  }
});

describe("client.cancel", () => {
  it("a run waiting for approval gets CancelledError at the wait, compensates, and ends cancelled with the reason", async () => {
    const rt = createTestRuntime({ workflows: [orderish] });
    await rt.start(orderish, { runId: "k1", input: {} });
    expect((await rt.client.cancel("k1", { reason: "customer withdrew" })).outcome).toBe("requested");
    await rt.settle();
    const run = await rt.get("k1");
    expect(run).toMatchObject({ status: "cancelled", error: { name: "CancelledError", fields: { reason: "customer withdrew" } } });
    expect(calls.count("release:k1/release:hold-1")).toBe(1);
    expect(calls.count("charge:k1")).toBe(0);
    // A late approval is refused with the wait's decision: cancelled.
    await expect(rt.client.signal("k1", "approval", { approved: true, approver: "ana" })).rejects.toThrow();
    expect((await rt.history("k1")).find((e) => e.key === "resolution#approval")?.record).toMatchObject({ via: "cancelled" });
  });

  it("a cancel that lands while the workflow already resolved its wait is delivered at the next point instead", async () => {
    const rt = createTestRuntime({ workflows: [orderish] });
    await rt.start(orderish, { runId: "k2", input: {} });
    await rt.client.signal("k2", "approval", { approved: true, approver: "ana" });
    await rt.client.cancel("k2", { reason: "too late?" });
    await rt.settle();
    // The approval decided the wait first; the charge is the next new step: it does not run.
    expect(await rt.get("k2")).toMatchObject({ status: "cancelled" });
    expect(calls.count("charge:k2")).toBe(0);
    expect((await rt.history("k2")).find((e) => e.key === "step#charge")?.record).toMatchObject({ status: "failed", error: { name: "CancelledError" } });
  });

  it("a run that never started ends cancelled at once; a finished run cannot be cancelled", async () => {
    const rt = createTestRuntime({ workflows: [orderish] });
    await rt.client.start(orderish, { runId: "k3", input: {} });
    expect((await rt.client.cancel("k3")).outcome).toBe("cancelled");
    expect(await rt.get("k3")).toMatchObject({ status: "cancelled" });
    await rt.settle();
    expect(calls.count("reserve:k3/reserve")).toBe(0);
    expect((await rt.client.cancel("k3")).outcome).toBe("already-ended");
  });
});

describe("the whole-run timeout", () => {
  it("cancels a run past its deadline the same way (compensation included), even while it waits without a timeout", async () => {
    const slow = durable({ name: "slow-approval", input: Empty, signals: { approval: Approval }, timeout: "2d" }, async (_in, step) => {
      const saga = step.saga();
      await step.run("reserve", () => "hold");
      saga.add("release", () => calls.hit(`release:${step.runId}`));
      try {
        await step.waitForSignal("approval"); // no timeout of its own
        return "approved";
      } catch (err) {
        await saga.compensate();
        throw err;
      }
    });
    const rt = createTestRuntime({ workflows: [slow] });
    await rt.start(slow, { runId: "t1", input: {} });
    expect((await rt.get("t1")).wakeAt).toBe(rt.clock.now() + 2 * 86_400_000);
    await rt.advance("3d");
    expect(await rt.get("t1")).toMatchObject({ status: "cancelled", error: { name: "CancelledError", message: expect.stringMatching(/timeout/) } });
    expect(calls.count("release:t1")).toBe(1);
  });
});

describe("a step running when the cancel comes (real SQLite journal, the local runtime's heartbeat)", () => {
  let rt: LocalRuntime | undefined;
  afterEach(async () => rt?.close());

  it("its AbortSignal fires, its late result is not recorded as success, and the compensation runs", async () => {
    let signalSeen: AbortSignal | undefined;
    const long = durable({ name: "long-step", input: z.object({}) }, async (_in, step) => {
      const saga = step.saga();
      saga.add("cleanup", () => calls.hit(`cleanup:${step.runId}`));
      try {
        return await step.run("export", async ({ signal }) => {
          signalSeen = signal;
          await new Promise((resolve) => setTimeout(resolve, 1_500)); // ignores the signal: its result comes late
          return "exported";
        });
      } catch (err) {
        await saga.compensate();
        throw err;
      }
    });
    rt = createLocalRuntime({ workflows: [long], file: join(mkdtempSync(join(tmpdir(), "waymark-cancel-")), "j.db"), leaseTtlMs: 300 });
    rt.start();
    await rt.client.start(long, { runId: "l1", input: {} });
    await until("the step to start", () => signalSeen !== undefined);
    await rt.client.cancel("l1", { reason: "operator" });
    const run = await rt.waitForRun("l1", { timeoutMs: 120_000 });
    expect(run).toMatchObject({ status: "cancelled", error: { fields: { reason: "operator" } } });
    expect(signalSeen?.aborted).toBe(true);
    expect(calls.count("cleanup:l1")).toBe(1);
    const record = (await rt.client.history("l1")).entries.find((e) => e.key === "step#export")?.record;
    expect(record).toMatchObject({ status: "failed", error: { name: "CancelledError" } });
  });
});
