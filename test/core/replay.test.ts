import { describe, expect, it } from "vitest";
import { z } from "zod";
import { durable } from "waymark";
import { createTestRuntime } from "waymark/testing";
import { Counter, Empty } from "./helpers.ts";

describe("replay", () => {
  it("returns finished steps from the journal instead of running them again", async () => {
    const svc = new Counter();
    const wf = durable({ name: "replay-basic", input: Empty }, async (_in, step) => {
      const a = await step.run("a", () => svc.hit("a"));
      await step.sleep("nap", "1h");
      const b = await step.run("b", () => svc.hit("b"));
      return { a, b };
    });
    const rt = createTestRuntime({ workflows: [wf] });
    await rt.start(wf, { runId: "r1", input: {} });
    expect((await rt.get("r1")).status).toBe("suspended");
    await rt.advance("1h");
    const run = await rt.get("r1");
    expect(run.status).toBe("completed");
    expect(run.result).toEqual({ a: 1, b: 1 });
    expect(svc.calls).toEqual(["a", "b"]);
    const replayed = rt.events.filter((e) => e.stepId === "a").map((e) => e.outcome);
    expect(replayed).toEqual(["completed", "replayed"]);
  });

  it("names the n-th use of a step name name#n, so loops replay to the same ids", async () => {
    const wf = durable({ name: "loop", input: z.object({ n: z.number() }) }, async ({ n }, step) => {
      const out: number[] = [];
      for (let i = 0; i < n; i++) out.push(await step.run("item", () => i * 10));
      await step.sleep("pause", "1m");
      for (let i = 0; i < n; i++) out.push(await step.run("item", () => -1));
      return out;
    });
    const rt = createTestRuntime({ workflows: [wf] });
    await rt.start(wf, { runId: "loop-1", input: { n: 3 } });
    await rt.advance("1m");
    expect((await rt.get("loop-1")).result).toEqual([0, 10, 20, -1, -1, -1]);
    const ids = (await rt.history("loop-1")).flatMap((e) => (e.record?.type === "step" ? [e.record.stepId] : []));
    expect(ids).toEqual(["item", "item#2", "item#3", "pause", "item#4", "item#5", "item#6"]);
  });

  it("gives every step an idempotency key stable across attempts and replays", async () => {
    const seen: Array<{ key: string; attempt: number }> = [];
    const wf = durable({ name: "keys", input: Empty, retries: { attempts: 3, initialDelay: "1s", jitter: 0 } }, async (_in, step) => {
      await step.run("charge", ({ idempotencyKey, attempt }) => {
        seen.push({ key: idempotencyKey, attempt });
        if (attempt < 3) throw new Error("provider down");
        return "ch_1";
      });
      await step.sleep("s", "1m");
      return step.run("charge", ({ idempotencyKey }) => idempotencyKey);
    });
    const rt = createTestRuntime({ workflows: [wf] });
    await rt.start(wf, { runId: "order-1", input: {} });
    await rt.advance("10m");
    expect(seen).toEqual([
      { key: "order-1/charge", attempt: 1 },
      { key: "order-1/charge", attempt: 2 },
      { key: "order-1/charge", attempt: 3 },
    ]);
    expect((await rt.get("order-1")).result).toBe("order-1/charge#2");
  });

  it("runs parallel steps with Promise.all and replays them to the same ids whatever order they finished in", async () => {
    const svc = new Counter();
    const wf = durable({ name: "fanout", input: Empty }, async (_in, step) => {
      const [slow, fast] = await Promise.all([
        step.run("slow", async () => {
          await new Promise((r) => setTimeout(r, 20));
          return svc.hit("slow");
        }),
        step.run("fast", () => svc.hit("fast")),
      ]);
      await step.sleep("s", "1m");
      return { slow, fast };
    });
    const rt = createTestRuntime({ workflows: [wf] });
    await rt.start(wf, { runId: "p1", input: {} });
    await rt.advance("1m");
    expect((await rt.get("p1")).result).toEqual({ slow: 1, fast: 1 });
    expect(svc.calls.sort()).toEqual(["fast", "slow"]);
  });

  it("makes now(), random() and uuid() return the same values on replay without extra writes", async () => {
    const seen: Array<{ now: number; random: number; uuid: string }> = [];
    const wf = durable({ name: "determinism", input: Empty }, async (_in, step) => {
      const v = { now: step.now().getTime(), random: step.random(), uuid: step.uuid() };
      seen.push(v);
      await step.sleep("s", "1h");
      return v;
    });
    const rt = createTestRuntime({ workflows: [wf] });
    await rt.start(wf, { runId: "d1", input: {} });
    const recordsBefore = (await rt.history("d1")).length;
    await rt.advance("1h");
    expect(seen).toHaveLength(2);
    expect(seen[1]).toEqual(seen[0]);
    expect((await rt.get("d1")).result).toEqual(seen[0]);
    expect(seen[0]?.uuid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    // The sleep is the only record: now() rode along on it.
    expect(recordsBefore).toBe(1);
  });

  it("does not let user code catch a suspension", async () => {
    const reached: string[] = [];
    const wf = durable({ name: "uncatchable", input: Empty }, async (_in, step) => {
      try {
        await step.sleep("s", "1h");
        reached.push("after-sleep");
      } catch {
        reached.push("caught");
      }
      return "done";
    });
    const rt = createTestRuntime({ workflows: [wf] });
    await rt.start(wf, { runId: "u1", input: {} });
    expect(reached).toEqual([]);
    expect((await rt.get("u1")).status).toBe("suspended");
    await rt.advance("1h");
    expect(reached).toEqual(["after-sleep"]);
  });
});
