import { describe, expect, it } from "vitest";
import { z } from "zod";
import { durable, JournalFormatError, SerializationError } from "waymark";
import { createTestRuntime } from "waymark/testing";
import { Empty } from "./helpers.ts";

describe("non-determinism", () => {
  it("fails the run loudly when a recorded step id is now a different kind", async () => {
    let version = 1;
    const wf = durable({ name: "kind-change", input: Empty }, async (_in, step) => {
      if (version === 1) await step.run("pay", () => 1);
      else await step.sleep("pay", "1m");
      await step.sleep("wait", "1h");
      return "done";
    });
    const rt = createTestRuntime({ workflows: [wf] });
    await rt.start(wf, { runId: "k1", input: {} });
    version = 2;
    await rt.advance("1h");
    const run = await rt.get("k1");
    expect(run.status).toBe("failed");
    expect(run.error?.name).toBe("NonDeterminismError");
    expect(run.error?.message).toBe('non-determinism at step "pay": the journal has a run step, the code a sleep step');
  });

  it("fails the run when a recorded step is never reached again (renamed or removed)", async () => {
    let name = "reserve";
    const wf = durable({ name: "rename", input: Empty }, async (_in, step) => {
      await step.run(name, () => 1);
      await step.sleep("wait", "1h");
      return "done";
    });
    const rt = createTestRuntime({ workflows: [wf] });
    await rt.start(wf, { runId: "n1", input: {} });
    name = "reserve_stock";
    await rt.advance("1h");
    const run = await rt.get("n1");
    expect(run.status).toBe("failed");
    expect(run.error?.name).toBe("NonDeterminismError");
    expect(run.error?.message).toContain('"reserve"');
  });

  it("does not let a workflow catch a non-determinism error", async () => {
    let version = 1;
    const caught: unknown[] = [];
    const wf = durable({ name: "catch-nd", input: Empty }, async (_in, step) => {
      try {
        if (version === 1) await step.run("a", () => 1);
        else await step.sleep("a", "1m");
      } catch (err) {
        caught.push(err);
      }
      await step.sleep("s", "1h");
      return "done";
    });
    const rt = createTestRuntime({ workflows: [wf] });
    await rt.start(wf, { runId: "c1", input: {} });
    version = 2;
    await rt.advance("1h");
    expect(caught).toEqual([]);
    expect((await rt.get("c1")).error?.name).toBe("NonDeterminismError");
  });
});

describe("journaled values", () => {
  it.each([
    ["a Date", () => new Date(0), "Date instance"],
    ["a BigInt", () => 10n, "BigInt"],
    ["a function", () => ({ f: () => 1 }), "function"],
    ["a Map", () => new Map(), "Map instance"],
    ["a cycle", () => {
      const o: Record<string, unknown> = {};
      o.self = o;
      return o;
    }, "cycle"],
    ["NaN", () => ({ n: Number.NaN }), "not a JSON number"],
  ])("refuses %s on first execution with a SerializationError naming the path", async (_label, make, reason) => {
    const wf = durable({ name: "bad-result", input: Empty }, async (_in, step) => step.run("r", make as () => unknown));
    const rt = createTestRuntime({ workflows: [wf] });
    await rt.start(wf, { runId: "b1", input: {} });
    const run = await rt.get("b1");
    expect(run.status).toBe("failed");
    expect(run.error?.name).toBe("StepFailedError");
    const failure = (run.error?.fields?.failure ?? {}) as { name: string; message: string };
    expect(failure.name).toBe(new SerializationError("", "").name);
    expect(failure.message).toContain('result of step "r"');
    expect(failure.message).toContain(reason);
  });

  it("fails a run with a diagnostic naming a record this code cannot read, and does not retry it", async () => {
    const wf = durable({ name: "format", input: Empty }, async (_in, step) => {
      await step.run("a", () => 1);
      await step.sleep("s", "1h");
      return "done";
    });
    const rt = createTestRuntime({ workflows: [wf] });
    await rt.start(wf, { runId: "f1", input: {} });
    await rt.store.appendRecord("f1", { key: "step#future", body: { v: 2, type: "step", kind: "teleport", stepId: "future", at: 0 } });
    await rt.advance("1h");
    const run = await rt.get("f1");
    expect(run.status).toBe("failed");
    expect(run.error?.name).toBe(new JournalFormatError("", "", "").name);
    expect(run.error?.message).toBe('run "f1": journal record "step#future" cannot be read by this code: record format version 2, this code reads version 1');
    const invocations = rt.invocations.filter((i) => i.runId === "f1").length;
    await rt.advance("7d");
    expect(rt.invocations.filter((i) => i.runId === "f1").length).toBe(invocations);
  });

  it("delivers a signal to its wait past a finished step's record this code cannot read (the deliverer reads waits and signals only); the invocation it wakes fails the run naming that record", async () => {
    const wf = durable({ name: "format-wait", input: Empty, signals: { go: z.object({}) } }, async (_in, step) => {
      await step.run("a", () => 1);
      const got = await step.waitForSignal("go", { timeout: "1h" });
      return got.received;
    });
    const rt = createTestRuntime({ workflows: [wf] });
    await rt.start(wf, { runId: "f2", input: {} });
    expect((await rt.get("f2")).status).toBe("suspended");
    await rt.store.appendRecord("f2", { key: "step#later", body: { v: 2, type: "step", kind: "run", stepId: "later", at: 0 } });
    // Before, the sender heard the JournalFormatError and the run slept on until its timeout.
    expect(await rt.signal("f2", "go", {})).toMatchObject({ status: "delivered", waitId: "go" });
    const run = await rt.get("f2");
    expect(run.status).toBe("failed");
    expect(run.error?.message).toBe('run "f2": journal record "step#later" cannot be read by this code: record format version 2, this code reads version 1');
  });
});
