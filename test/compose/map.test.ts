/**
 * Issue 11, item 2: bounded fan-out. `step.map` over 1,000 items with `concurrency: 10` never has
 * more than 10 bodies running (measured by the bodies themselves), keeps results in item order,
 * survives a suspension in the middle (an item waiting for its retry) without re-running recorded
 * items, and fails fast or collects. On the testing runtime and on a real SQLite journal.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { durable, NonRetryableError, RetryAfterError } from "waymark";
import { createTestRuntime } from "waymark/testing";
import { sqliteLab } from "../support/sqlite-lab.ts";

function gauge() {
  let running = 0;
  let max = 0;
  const ran: number[] = [];
  return {
    get max() {
      return max;
    },
    ran,
    async body<T>(i: number, value: T): Promise<T> {
      running++;
      max = Math.max(max, running);
      ran.push(i);
      await new Promise((r) => setTimeout(r, i % 3));
      running--;
      return value;
    },
  };
}

describe("step.map", () => {
  it("1,000 items, concurrency 10: never more than 10 bodies at once, results in item order", async () => {
    const g = gauge();
    const wf = durable({ name: "fan", input: z.object({ n: z.number() }) }, async ({ n }, step) =>
      step.map("square", Array.from({ length: n }, (_, i) => i), (i) => g.body(i, i * i), { concurrency: 10 }),
    );
    const lab = sqliteLab([wf]);
    try {
      await lab.client().start(wf, { runId: "m1", input: { n: 1_000 } });
      const res = await lab.engine("w").invoke("m1");
      expect(res.status).toBe("completed");
      const result = (res as { result: number[] }).result;
      expect(result).toHaveLength(1_000);
      expect(result.every((v, i) => v === i * i)).toBe(true);
      expect(g.max).toBe(10);
      expect(new Set(g.ran).size).toBe(1_000);
      // Replays return every item from the journal without running a body.
      expect(await lab.engine("w2").invoke("m1")).toEqual({ status: "finished" });
    } finally {
      lab.close();
    }
  });

  it("a suspension mid-map (an item's retry delay) keeps the bound and does not re-run recorded items", async () => {
    const g = gauge();
    let failedOnce = false;
    const wf = durable({ name: "fan-retry", input: z.object({}) }, async (_in, step) =>
      step.map("item", Array.from({ length: 40 }, (_, i) => i), async (i) => {
        if (i === 7 && !failedOnce) {
          failedOnce = true;
          throw new RetryAfterError("busy", { after: "1m" });
        }
        return g.body(i, i);
      }, { concurrency: 4 }),
    );
    const rt = createTestRuntime({ workflows: [wf] });
    await rt.start(wf, { runId: "m2", input: {} });
    expect((await rt.get("m2")).status).toBe("suspended");
    await rt.advance("2m");
    expect(await rt.get("m2")).toMatchObject({ status: "completed", result: Array.from({ length: 40 }, (_, i) => i) });
    expect(g.max).toBeLessThanOrEqual(4);
    expect(g.ran.filter((i) => i !== 7).length).toBe(39); // every other item ran exactly once
    expect(new Set(g.ran).size).toBe(40);
  });

  it("fail-fast rejects with the first failure and starts no new item; collect runs them all", async () => {
    const started: number[] = [];
    const body = (i: number) => {
      started.push(i);
      if (i === 2) throw new NonRetryableError("bad item");
      return i;
    };
    const fast = durable({ name: "fan-fast", input: z.object({}) }, async (_in, step) => {
      try {
        await step.map("x", [0, 1, 2, 3, 4, 5, 6, 7], body, { concurrency: 2 });
        return "no";
      } catch (err) {
        return (err as Error).name;
      }
    });
    const all = durable({ name: "fan-all", input: z.object({}) }, async (_in, step) =>
      (await step.map("x", [0, 1, 2, 3], body, { concurrency: 2, failures: "collect" })).map((o) => o.ok),
    );
    const rt = createTestRuntime({ workflows: [fast, all] });
    await rt.start(fast, { runId: "f", input: {} });
    expect((await rt.get("f")).result).toBe("StepFailedError");
    expect(started.filter((i) => i > 3)).toEqual([]);
    await rt.start(all, { runId: "a", input: {} });
    expect((await rt.get("a")).result).toEqual([true, true, false, true]);
  });
});
