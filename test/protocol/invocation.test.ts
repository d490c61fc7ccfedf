/**
 * Issue 17, what the simulator found inside one invocation, as exact interleavings on a real
 * SQLite journal:
 *
 * - an invocation that ended (a journal write failed, the lease was lost) started no further step
 *   body — before, a `step.map`'s workers went on starting items after the engine had released
 *   the run to others;
 * - a child's parent record is written before the child run exists, so a child that some other
 *   worker runs to its end at once still reaches its parent (before: it ended with no parent
 *   record, and the parent waited for ever);
 * - effects on other runs (cancelling two children) that fail never leave an unhandled rejection,
 *   which would crash a Node process; the invocation is retried and the next one cancels both.
 */
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { CancelledError, durable } from "waymark";
import { Gates, within } from "../support/gates.ts";
import { PausingStore } from "../support/pausing-store.ts";
import { type SqliteLab, sqliteLab } from "../support/sqlite-lab.ts";

let lab: SqliteLab;
afterEach(() => lab?.close());

/** Timers that fire within 20 ms (an ending invocation's grace for bodies still running, the heartbeat), so a test is quick; the clock does not move. */
const quick = {
  after: (ms: number, fn: () => void) => {
    const t = setTimeout(fn, Math.min(ms, 20));
    return () => clearTimeout(t);
  },
  defer: (fn: () => void) => void setImmediate(fn),
};

/**
 * A `step.map` over `items`, two at a time, each body waiting on its gate: items 0 and 1 start,
 * item 1 ends, and its record's write fails before it is applied (getRecord then finds nothing):
 * the invocation ends with the fault, item 0's body still running.
 */
async function itemOneWriteFails(name: string, runId: string, items: number[]): Promise<{ gates: Gates; started: number[] }> {
  const gates = new Gates();
  const started: number[] = [];
  const wf = durable({ name, input: z.object({}) }, async (_in, step) =>
    step.map("m", items, (i, item) => item.run("work", () => (started.push(i), gates.wait(`i${i}`))), { concurrency: 2 }),
  );
  lab = sqliteLab([wf]);
  const pausing = new PausingStore(lab.store);
  await lab.client().start(wf, { runId, input: {} });
  const failing = pausing.hold("appendRecord", "before", (args) => (args[1] as { key: string }).key === "step#m[1]/work");
  const invocation = lab.engine("W", pausing.store, { timers: quick }).invoke(runId);
  await gates.started("i0");
  await gates.started("i1");
  gates.open("i1", 0, 1);
  await failing.reached;
  failing.fail(new Error("the journal is unreachable"));
  await expect(within(10_000, "the invocation", invocation)).rejects.toThrow(/unreachable/);
  return { gates, started };
}

describe("one invocation", () => {
  it("once a journal write fails, no further map item starts, though items were in flight", async () => {
    const { gates, started } = await itemOneWriteFails("items", "a1", [0, 1, 2, 3]);
    gates.open("i0", 0, 0); // item 0 finishes after the invocation has ended
    await new Promise((r) => setTimeout(r, 50));
    expect(started).toEqual([0, 1]);
  });

  it("a journal write that fails while a sibling's body still runs does not free the run for another invocation to start that body again", async () => {
    // Soak seed 1281797920 (double-start): the fault path released the lease at once, while
    // item 0's body still ran; the next invocation replayed and started item 0's attempt 1 again.
    const { gates, started } = await itemOneWriteFails("items-fault", "a2", [0, 1]);
    // Item 0's body still runs: the lease stays until it lapses, and the next invocation finds the run busy.
    // (Before: it took the released lease and started both items again, waiting on their gates.)
    expect(await within(10_000, "the next invocation", lab.engine("V").invoke("a2"))).toEqual({ status: "busy" });
    expect(started).toEqual([0, 1]);
    gates.open("i0", 0, 0);
  });

  it("a child that another worker runs to its end before its parent's start step returns still reaches its parent", async () => {
    const child = durable({ name: "kid", input: z.object({}) }, async (_in, step) => step.run("work", () => 42));
    const parent = durable({ name: "parent", input: z.object({}) }, async (_in, step) => step.invoke("kid", child, { input: {} }));
    lab = sqliteLab([parent, child]);
    const pausing = new PausingStore(lab.store);
    await lab.client().start(parent, { runId: "p1", input: {} });
    // The parent's start step creates the child, and its answer is held.
    const created = pausing.hold("createRun", "after", (args) => (args[0] as { runId: string }).runId === "p1:kid");
    const parentRun = lab.engine("P", pausing.store).invoke("p1");
    await created.reached;
    // Meanwhile another worker (a watchdog's wake) runs the child to its end.
    expect(await lab.engine("C").invoke("p1:kid")).toEqual({ status: "completed", result: 42 });
    created.release();
    await parentRun;
    // The child's end is the parent's signal: the parent completes with it.
    expect(await lab.engine("P2").invoke("p1")).toEqual({ status: "completed", result: 42 });
  });

  it("two children whose cancellation fails: no unhandled rejection; the next invocation cancels both", async () => {
    const gates = new Gates();
    const child = durable({ name: "slow-kid", input: z.object({ n: z.number() }) }, async ({ n }, step) => {
      await step.sleep("nap", "1h");
      return n;
    });
    const parent = durable({ name: "two-kids", input: z.object({}) }, async (_in, step) => {
      try {
        return await Promise.all([1, 2].map((n) => step.invoke(`kid${n}`, child, { input: { n } })));
      } catch (err) {
        if (err instanceof CancelledError) await step.run("note", () => gates.wait("note"), { compensation: true });
        throw err;
      }
    });
    lab = sqliteLab([parent, child]);
    await lab.client().start(parent, { runId: "p2", input: {} });
    expect(await lab.engine("P").invoke("p2")).toMatchObject({ status: "suspended" });
    await lab.client().cancel("p2", { reason: "stop" });
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    try {
      // The children cannot be told: reading each child run fails.
      const pausing = new PausingStore(lab.store);
      const one = pausing.hold("getRun", "before", (args) => args[0] === "p2:kid1");
      const two = pausing.hold("getRun", "before", (args) => args[0] === "p2:kid2");
      const invocation = lab.engine("P2", pausing.store).invoke("p2");
      await one.reached;
      await two.reached;
      one.fail(new Error("kid1 unreachable"));
      two.fail(new Error("kid2 unreachable"));
      await gates.started("note");
      gates.open("note", 0, "noted");
      await expect(within(10_000, "the invocation", invocation)).rejects.toThrow(/unreachable/);
      await new Promise((r) => setImmediate(r));
      expect(unhandled).toEqual([]);
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
    // Retried: both children are asked to cancel, and end so; the parent ends cancelled.
    lab.clock.advance(10_000);
    // (The compensation "note" was recorded by the first invocation: replayed, not run again.)
    expect(await lab.engine("P3").invoke("p2")).toMatchObject({ status: "cancelled" });
    expect(gates.count("note")).toBe(1);
    for (const kid of ["p2:kid1", "p2:kid2"]) expect((await lab.store.getRecord(kid, "cancel"))?.body).toMatchObject({ reason: expect.stringMatching(/parent was cancelled/) });
  });

  it("a sleep's record says when the sleep began, though it is written at the suspension", async () => {
    const wf = durable({ name: "nap-beside", input: z.object({}) }, async (_in, step) => {
      await Promise.all([step.sleep("nap", "600ms"), step.run("slow", () => (lab.clock.advance(50), 1))]);
      return "rested";
    });
    lab = sqliteLab([wf]);
    await lab.client().start(wf, { runId: "n1", input: {} });
    const began = lab.clock.now();
    expect(await lab.engine("W").invoke("n1")).toMatchObject({ status: "suspended" });
    const record = (await lab.store.getRecord("n1", "step#nap"))?.body as { wakeAt: number; startedAt?: number; at: number };
    expect(record).toMatchObject({ wakeAt: began + 600, startedAt: began, at: began + 50 });
  });
});
