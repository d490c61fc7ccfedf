import { describe, expect, it } from "vitest";
import { z } from "zod";
import { durable, InvalidInputError, RunConflictError } from "waymark";
import { createTestRuntime } from "waymark/testing";
import { Engine, createRegistry } from "waymark";
import { Empty } from "./helpers.ts";

const Order = z.object({ id: z.string(), amount: z.number().positive() });
const orderFlow = durable({ name: "orders", input: Order }, async (order, step) => {
  const id = await step.run("charge", () => `ch_${order.id}`);
  return { id, amount: order.amount };
});

describe("starting runs", () => {
  it("refuses invalid input with the schema's issues and writes nothing", async () => {
    const rt = createTestRuntime({ workflows: [orderFlow] });
    const err = await rt.start(orderFlow, { runId: "o1", input: { id: 7, amount: -1 } as never }).catch((e) => e);
    expect(err).toBeInstanceOf(InvalidInputError);
    expect((err as InvalidInputError).issues.map((i) => i.path)).toEqual(["id", "amount"]);
    expect((await rt.client.list()).runs).toEqual([]);
  });

  it("is idempotent by run id: the same input returns the run, another input is a conflict", async () => {
    const rt = createTestRuntime({ workflows: [orderFlow] });
    const first = await rt.start(orderFlow, { runId: "o1", input: { id: "a", amount: 5 } });
    expect(first.created).toBe(true);
    const again = await rt.start(orderFlow, { runId: "o1", input: { amount: 5, id: "a" } });
    expect(again.created).toBe(false);
    const err = await rt.start(orderFlow, { runId: "o1", input: { id: "a", amount: 6 } }).catch((e) => e);
    expect(err).toBeInstanceOf(RunConflictError);
    expect((err as Error).message).toContain('"o1"');
    expect((await rt.get("o1")).result).toEqual({ id: "ch_a", amount: 5 });
  });

  it("fails a run whose workflow throws, with the error journaled", async () => {
    const wf = durable({ name: "throws", input: Empty }, async () => {
      throw new TypeError("bad state");
    });
    const rt = createTestRuntime({ workflows: [wf] });
    await rt.start(wf, { runId: "t1", input: {} });
    expect(await rt.get("t1")).toMatchObject({ status: "failed", error: { name: "TypeError", message: "bad state" } });
  });

  it("cancels a suspended run: its sleep ends with CancelledError and the run ends cancelled, with the reason", async () => {
    const wf = durable({ name: "sleepy", input: Empty }, async (_in, step) => {
      await step.sleep("s", "1h");
      return step.run("after", () => "ran");
    });
    const rt = createTestRuntime({ workflows: [wf] });
    await rt.start(wf, { runId: "s1", input: {} });
    expect((await rt.client.cancel("s1", { reason: "customer withdrew" })).outcome).toBe("requested");
    await rt.advance("2h");
    expect(await rt.get("s1")).toMatchObject({ status: "cancelled", error: { name: "CancelledError", fields: { reason: "customer withdrew" } } });
    expect((await rt.history("s1")).map((e) => e.key).sort()).toEqual(["cancel", "resolution#s", "step#s"]);
    expect((await rt.client.cancel("s1")).outcome).toBe("already-ended"); // finished: nothing to cancel
  });
});

describe("sleeps", () => {
  it("sleepUntil wakes at the given moment", async () => {
    const wf = durable({ name: "until", input: z.object({ at: z.number() }) }, async ({ at }, step) => {
      await step.sleepUntil("deadline", at);
      return step.now().getTime();
    });
    const rt = createTestRuntime({ workflows: [wf], start: new Date("2026-01-01T00:00:00Z") });
    const at = Date.parse("2026-01-03T12:00:00Z");
    await rt.start(wf, { runId: "u1", input: { at } });
    expect(await rt.get("u1")).toMatchObject({ status: "suspended", wakeAt: at, waitingFor: "sleep:deadline" });
    await rt.advance("60h");
    expect((await rt.get("u1")).result).toBe(at);
  });
});

describe("checkpoint and continue", () => {
  it("suspends before the next step when the invocation runs short of time, and resumes in the next", async () => {
    const executed: string[] = [];
    const wf = durable({ name: "long", input: Empty }, async (_in, step) => {
      for (let i = 0; i < 5; i++) await step.run("s", () => executed.push(`s${i}`));
      return executed.length;
    });
    const rt = createTestRuntime({ workflows: [wf] });
    await rt.client.start(wf, { runId: "l1", input: {} });
    let budget = 2;
    const engine = new Engine({ store: rt.store, wakes: rt.wakes, clock: rt.clock, workflows: createRegistry([wf]), owner: "lambda" });
    const first = await engine.invoke("l1", { shouldYield: () => budget-- <= 0 });
    expect(first).toMatchObject({ status: "suspended", waitingFor: "continue" });
    expect(executed).toEqual(["s0", "s1"]);
    await rt.settle();
    expect((await rt.get("l1")).result).toBe(5);
  });

  it("fails a run that exceeds its invocation budget instead of waking itself forever", async () => {
    const wf = durable({ name: "runaway", input: Empty }, async (_in, step) => {
      for (let i = 0; i < 100; i++) await step.run("s", () => i);
      return "done";
    });
    const rt = createTestRuntime({ workflows: [wf] });
    await rt.client.start(wf, { runId: "r1", input: {} });
    const engine = new Engine({ store: rt.store, wakes: rt.wakes, clock: rt.clock, workflows: createRegistry([wf]), owner: "lambda", maxInvocations: 3 });
    const results = [];
    for (let i = 0; i < 5; i++) results.push((await engine.invoke("r1", { shouldYield: () => true })).status);
    expect(results.slice(0, 3)).toEqual(["suspended", "suspended", "suspended"]);
    expect(results[3]).toBe("failed");
    expect((await rt.get("r1")).error?.name).toBe("InvocationBudgetError");
  });
});
