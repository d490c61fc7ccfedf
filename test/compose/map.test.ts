/**
 * `step.map` and `step.parallel` with durable sub-contexts (issue 21 item 2; the bound itself is
 * issue 11 item 2). Each item gets its own step API — run, sleep, waitForSignal, invoke, a nested
 * map — journaled under `<mapId>[<index>]/…`; at most `concurrency` items run at once, an item
 * asleep or waiting frees its slot (or keeps it, if asked), and replays find every item. On the
 * testing runtime and on a real SQLite journal.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { durable, NonRetryableError, RetryAfterError, type Step } from "waymark";
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
  it("1,000 items, concurrency 10: never more than 10 bodies at once, results in item order, each item's steps under its scope", async () => {
    const g = gauge();
    const wf = durable({ name: "fan", input: z.object({ n: z.number() }) }, async ({ n }, step) =>
      step.map("square", Array.from({ length: n }, (_, i) => i), (i, item) => item.run("calc", () => g.body(i, i * i)), { concurrency: 10 }),
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
      expect(await lab.store.getRecord("m1", "step#square[417]/calc")).toBeDefined();
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
      step.map(
        "item",
        Array.from({ length: 40 }, (_, i) => i),
        (i, item) =>
          item.run("work", async () => {
            if (i === 7 && !failedOnce) {
              failedOnce = true;
              throw new RetryAfterError("busy", { after: "1m" });
            }
            return g.body(i, i);
          }),
        { concurrency: 4 },
      ),
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

  it("fail-fast rejects with the lowest-index failure and starts no new item; collect runs them all, errors JSON-safe", async () => {
    const started: number[] = [];
    const work = (i: number, item: Pick<Step, "run">) =>
      item.run("body", () => {
        started.push(i);
        if (i === 2) throw new NonRetryableError("bad item");
        return i;
      });
    const fast = durable({ name: "fan-fast", input: z.object({}) }, async (_in, step) => {
      try {
        await step.map("x", [0, 1, 2, 3, 4, 5, 6, 7], (i, item) => work(i, item), { concurrency: 2 });
        return "no";
      } catch (err) {
        return (err as Error).name;
      }
    });
    const all = durable({ name: "fan-all", input: z.object({}) }, async (_in, step) => step.map("x", [0, 1, 2, 3], (i, item) => work(i, item), { concurrency: 2, failures: "collect" }));
    const rt = createTestRuntime({ workflows: [fast, all] });
    await rt.start(fast, { runId: "f", input: {} });
    expect((await rt.get("f")).result).toBe("StepFailedError");
    expect(started.filter((i) => i > 3)).toEqual([]);
    await rt.start(all, { runId: "a", input: {} });
    // The outcomes are the run's result: JSON, not Error objects (before: returning them failed the run).
    expect((await rt.get("a")).result).toEqual([
      { ok: true, value: 0 },
      { ok: true, value: 1 },
      { ok: false, error: expect.objectContaining({ name: "StepFailedError" }) },
      { ok: true, value: 3 },
    ]);
  });
});

describe("step.map items are durable sub-contexts", () => {
  const Approval = z.object({ ok: z.boolean() });

  it("items sleep and wait for their own signals; an item asleep or waiting frees its slot; each replays exactly", async () => {
    const g = gauge();
    const wf = durable({ name: "approvals", input: z.object({ n: z.number() }), signals: { approve: Approval } }, async ({ n }, step) =>
      step.map(
        "invoice",
        Array.from({ length: n }, (_, i) => i),
        async (i, item) => {
          await item.run("prepare", () => g.body(i, i));
          const answer = await item.waitForSignal("approve", { timeout: "1d" });
          if (!answer.received || !answer.payload.ok) return `${i}:declined`;
          await item.sleep("cool-off", "1h");
          return item.run("pay", () => `${i}:paid`);
        },
        { concurrency: 2 },
      ),
    );
    const rt = createTestRuntime({ workflows: [wf] });
    await rt.start(wf, { runId: "ap", input: { n: 5 } });
    // Every item is waiting: with the slots freed, all five prepared, two at a time at most.
    expect(g.ran.sort()).toEqual([0, 1, 2, 3, 4]);
    expect(g.max).toBeLessThanOrEqual(2);
    for (const i of [4, 0, 2, 1, 3]) await rt.signal("ap", "approve", { ok: i !== 3 }, { waitId: `invoice[${i}]/approve` });
    await rt.advance("1h");
    expect(await rt.get("ap")).toMatchObject({ status: "completed", result: ["0:paid", "1:paid", "2:paid", "3:declined", "4:paid"] });
    const keys = (await rt.history("ap")).map((e) => e.key);
    expect(keys).toContain("step#invoice[3]/approve");
    expect(keys).toContain("step#invoice[4]/cool-off");
    expect(g.ran.length).toBe(5); // nothing re-ran over the replays
  });

  it("holdSlotWhileWaiting: at most `concurrency` items are open at once, the next starts when one ends", async () => {
    const wf = durable({ name: "held", input: z.object({}), signals: { approve: Approval } }, async (_in, step) =>
      step.map("q", [0, 1, 2], async (_i, item) => (await item.waitForSignal("approve")).received, { concurrency: 1, holdSlotWhileWaiting: true }),
    );
    const rt = createTestRuntime({ workflows: [wf] });
    await rt.start(wf, { runId: "h", input: {} });
    const waits = async () => (await rt.history("h")).filter((e) => e.record?.type === "step" && e.record.kind === "wait").map((e) => e.key);
    expect(await waits()).toEqual(["step#q[0]/approve"]);
    await rt.signal("h", "approve", { ok: true }, { waitId: "q[0]/approve" });
    expect(await waits()).toEqual(["step#q[0]/approve", "step#q[1]/approve"]);
  });

  it("items invoke children, and nest maps; the children's default ids name the item", async () => {
    const child = durable({ name: "square-child", input: z.object({ n: z.number() }) }, async ({ n }, step) => step.run("sq", () => n * n));
    const wf = durable({ name: "grid", input: z.object({}) }, async (_in, step) =>
      step.map("row", [1, 2], (r, row) => row.map("col", [1, 2, 3], (c, cell) => cell.invoke("mul", child, { input: { n: r * 10 + c } }), { concurrency: 2 }), { concurrency: 2 }),
    );
    const rt = createTestRuntime({ workflows: [wf, child] });
    await rt.start(wf, { runId: "g", input: {} });
    expect(await rt.get("g")).toMatchObject({ status: "completed", result: [[121, 144, 169], [441, 484, 529]] });
    expect((await rt.get("g:row:1:col:2:mul")).status).toBe("completed");
  });

  it("an item waiting for its child keeps its slot: concurrency bounds the children running at once", async () => {
    const child = durable({ name: "held-child", input: z.object({ n: z.number() }), signals: { go: z.object({}) } }, async ({ n }, step) => {
      await step.waitForSignal("go");
      return n;
    });
    const wf = durable({ name: "kids", input: z.object({}) }, async (_in, step) =>
      step.map("kids", [0, 1, 2, 3], (n, item) => item.invoke("pay", child, { input: { n } }), { concurrency: 2 }),
    );
    const rt = createTestRuntime({ workflows: [wf, child] });
    const kid = (i: number) => `p:kids:${i}:pay`;
    const started = async () => {
      const out: number[] = [];
      for (const i of [0, 1, 2, 3]) if (await rt.get(kid(i)).then(() => true, () => false)) out.push(i);
      return out;
    };
    await rt.start(wf, { runId: "p", input: {} });
    expect(await started()).toEqual([0, 1]);
    await rt.signal(kid(1), "go", {});
    expect(await started()).toEqual([0, 1, 2]);
    for (const i of [0, 2]) await rt.signal(kid(i), "go", {});
    expect(await started()).toEqual([0, 1, 2, 3]);
    await rt.signal(kid(3), "go", {});
    expect(await rt.get("p")).toMatchObject({ status: "completed", result: [0, 1, 2, 3] });
  });

  it("step.parallel runs named branches in sub-contexts and returns their results by name", async () => {
    const wf = durable({ name: "trip", input: z.object({}) }, async (_in, step) =>
      step.parallel("book", {
        flight: async (b) => {
          await b.sleep("hold", "10m");
          return b.run("flight", () => "AF123");
        },
        hotel: (b) => b.run("hotel", () => "H7"),
      }),
    );
    const rt = createTestRuntime({ workflows: [wf] });
    await rt.start(wf, { runId: "t", input: {} });
    expect((await rt.get("t")).status).toBe("suspended");
    await rt.advance("10m");
    expect(await rt.get("t")).toMatchObject({ status: "completed", result: { flight: "AF123", hotel: "H7" } });
    expect((await rt.history("t")).map((e) => e.key)).toEqual(expect.arrayContaining(["step#book[flight]/hold", "step#book[flight]/flight", "step#book[hotel]/hotel"]));
  });

  it("code written for the map of earlier versions (a step body per item) gets a clear error, not a silent rerun", async () => {
    const wf = durable({ name: "old-style", input: z.object({}) }, async (_in, step) =>
      step.map("send", [1], async (_i, ctx) => (ctx as unknown as { idempotencyKey: string }).idempotencyKey),
    );
    const rt = createTestRuntime({ workflows: [wf] });
    await rt.start(wf, { runId: "o", input: {} });
    expect(await rt.get("o")).toMatchObject({ status: "failed", error: { name: "WorkflowDefinitionError", message: expect.stringMatching(/step\.run/) } });
  });

  it("a run recorded by the map of earlier versions (one step per item) keeps those results and runs only the rest", async () => {
    let calls = 0;
    const wf = durable({ name: "legacy-map", input: z.object({}) }, async (_in, step) => step.map("m", [0, 1, 2], (i, item) => item.run("x", () => (calls++, i * 100))));
    const lab = sqliteLab([wf]);
    try {
      await lab.client().start(wf, { runId: "l", input: {} });
      // Items 0 and 1 as the earlier map recorded them.
      for (const i of [0, 1]) await lab.store.appendRecord("l", { key: `step#m/${i}`, body: { v: 1, at: 1, type: "step", kind: "run", stepId: `m/${i}`, status: "ok", result: i, attempts: 1, startedAt: 1 } });
      expect(await lab.engine("w").invoke("l")).toEqual({ status: "completed", result: [0, 1, 200] });
      expect(calls).toBe(1);
    } finally {
      lab.close();
    }
  });
});
