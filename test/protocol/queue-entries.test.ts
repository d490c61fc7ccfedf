/**
 * The soak's finding (seed 854766348): an invocation of r1 found its key's slots taken, released
 * the run as queued — and its answer came back only much later (a frozen process). Meanwhile the
 * next invocation took the run, found a slot free and ran it. Then the first one went on, and put
 * r1 into the queue: an entry of a run that holds a slot, or has ended. Such an entry held up the
 * queue while r1 ran (a promoter stops at a head that is not waiting), and outlived r1 when its
 * end could not hand its slot on. Now a promoter passes over a head that runs with a slot of the
 * scope, a run that ends takes its own entry out, and a store queues no run that has ended (the
 * store contract holds the last for every store). Each interleaving is exact, on a real SQLite
 * journal.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { durable } from "waymark";
import { flowScope } from "../../lib/core/flow-control.ts";
import type { Engine } from "../../lib/core/engine.ts";
import type { JournalStore } from "../../lib/ports.ts";
import { Gates, within } from "../support/gates.ts";
import { PausingStore } from "../support/pausing-store.ts";
import { type SqliteLab, sqliteLab } from "../support/sqlite-lab.ts";

let lab: SqliteLab;
let gates: Gates;
beforeEach(() => {
  gates = new Gates();
});
afterEach(() => lab?.close());

const flow = durable({ name: "queue-limited", input: z.object({ key: z.string() }), concurrency: { key: (i) => i.key, limit: 2 } }, async (_in, step) =>
  step.run("work", () => gates.wait(step.runId)),
);
const scope = flowScope(flow.key, "k");

/** Ten minutes: no lease expires while a test waits on a gate. */
const engine = (owner: string, store: JournalStore = lab.store): Engine => lab.engine(owner, store, { leaseTtlMs: 600_000 });

/** Starts runs of key `k` in this order, a millisecond apart (the queue's order is their creation). */
async function start(...runIds: string[]): Promise<void> {
  for (const runId of runIds) {
    await lab.client().start(flow, { runId, input: { key: "k" } });
    lab.clock.advance(1);
  }
}

/** Runs `runId` in a fresh engine until its step function waits on its gate. */
async function running(runId: string, store: JournalStore = lab.store): Promise<{ invocation: Promise<unknown> }> {
  const invocation = engine(`E-${runId}`, store).invoke(runId);
  await gates.started(runId);
  return { invocation }; // wrapped: an async function's result would wait for it
}

/** Ends a running run: its gate opens, its invocation completes. */
async function finish(runId: string, run: { invocation: Promise<unknown> }): Promise<void> {
  gates.open(runId, 0, runId);
  expect(await within(60_000, `${runId}'s invocation`, run.invocation)).toEqual({ status: "completed", result: runId });
}

/** Z's invocation of r1 finds both slots taken: its release as queued applies, and its answer is held. */
async function zombie(): Promise<{ go: () => Promise<unknown> }> {
  const pausing = new PausingStore(lab.store);
  const held = pausing.hold("releaseLease", "after", (args) => args[0] === "r1");
  const z = engine("Z", pausing.store).invoke("r1");
  await held.reached;
  expect((await lab.store.getRun("r1"))?.status).toBe("queued");
  return {
    go: () => {
      held.release();
      return within(60_000, "Z's invocation", z);
    },
  };
}

/** The queue's entries, first to last (taken out to be read: the test's last look). */
async function drainQueue(): Promise<string[]> {
  const entries: string[] = [];
  for (let runId = await lab.store.dequeue(scope); runId !== undefined; runId = await lab.store.dequeue(scope)) entries.push(runId);
  return entries;
}

describe("a late enqueue of a run by an invocation that lost its lease", () => {
  it("does not hold up the queue while the run runs with its slot", async () => {
    lab = sqliteLab([flow]);
    await start("a", "b", "r1", "r2");
    const a = await running("a");
    const b = await running("b");
    const z = await zombie();
    // a ends: nobody is queued yet, a slot is free; the next invocation of r1 takes it and runs.
    await finish("a", a);
    const r1 = await running("r1");
    // Z's answer comes: it enqueues r1, which holds a slot now.
    expect(await z.go()).toMatchObject({ status: "queued" });
    // r2 queues (b and r1 hold both slots); b ends and its slot goes to r2.
    expect(await engine("E-r2-first").invoke("r2")).toMatchObject({ status: "queued" });
    await finish("b", b);
    expect((await lab.store.slots(scope)).map((s) => s.runId).sort()).toEqual(["r1", "r2"]); // before: r2 left waiting behind r1's entry
    expect(lab.scheduled.some((w) => w.runId === "r2" && w.key === "slot")).toBe(true);
    const r2 = await running("r2");
    await finish("r1", r1);
    await finish("r2", r2);
    expect(await drainQueue()).toEqual([]);
  });

  it("is taken out when the run ends and cannot hand its slot on", async () => {
    lab = sqliteLab([flow]);
    await start("a", "b", "q", "r1");
    const a = await running("a");
    const b = await running("b");
    const z = await zombie();
    await finish("a", a);
    // r1's next invocation takes the free slot; the store will fail its slot's release at the end.
    const pausing = new PausingStore(lab.store);
    const free = pausing.hold("freeSlot", "before", (args) => args[1] === "r1");
    const r1 = await running("r1", pausing.store);
    // q queues (b and r1 hold both slots); then Z's answer comes and enqueues r1, behind q.
    expect(await engine("E-q").invoke("q")).toMatchObject({ status: "queued" });
    expect(await z.go()).toMatchObject({ status: "queued" });
    // r1 ends; its slot is not freed, so no promoter looks at the queue after it.
    gates.open("r1", 0, "r1");
    await free.reached;
    free.fail(new Error("store unreachable"));
    expect(await within(60_000, "r1's invocation", r1.invocation)).toEqual({ status: "completed", result: "r1" });
    expect(await drainQueue()).toEqual(["q"]); // before: ["q", "r1"]
    await finish("b", b);
  });

  it("adds nothing when the run has ended meanwhile", async () => {
    lab = sqliteLab([flow]);
    await start("a", "b", "q", "q2", "r1");
    const a = await running("a");
    const b = await running("b");
    const z = await zombie();
    await finish("a", a);
    // r1's next invocation takes the free slot, runs and ends; q takes the slot it frees.
    await finish("r1", await running("r1"));
    const q = await running("q");
    // q2 queues (b and q hold both slots); then Z's answer comes and enqueues r1, ended, behind q2.
    expect(await engine("E-q2").invoke("q2")).toMatchObject({ status: "queued" });
    expect(await z.go()).toMatchObject({ status: "queued" }); // what it did, as far as it knows
    expect(await drainQueue()).toEqual(["q2"]); // before: ["q2", "r1"]
    await finish("b", b);
    await finish("q", q);
  });

  it("adds nothing while a canceller holds the run: a queued run cancelled between its release and its enqueue leaves no entry (flow story seed 1015821)", async () => {
    lab = sqliteLab([flow]);
    await start("a", "b", "r1");
    const a = await running("a");
    const b = await running("b");
    // Z's invocation of r1 finds both slots held and releases r1 as queued; its enqueue is held.
    const zStore = new PausingStore(lab.store);
    const enqueue = zStore.hold("enqueue", "before", (args) => args[1] === "r1");
    const z = engine("Z", zStore.store).invoke("r1");
    await enqueue.reached;
    // The client cancels r1 (queued, nothing run): under its own lease it takes r1 out of the
    // queue (nothing there yet), and its finish is held; the hand-on after it will fail.
    const clientStore = new PausingStore(lab.store);
    const finishing = clientStore.hold("finishRun", "before", (args) => args[0] === "r1");
    const handOn = clientStore.hold("peek", "before");
    const cancel = lab.client(clientStore.store).cancel("r1", { reason: "withdrawn" });
    await finishing.reached;
    // Z's enqueue lands while the canceller holds r1; then r1 ends.
    enqueue.release();
    expect(await within(60_000, "Z's invocation", z)).toMatchObject({ status: "queued" }); // what it did, as far as it knows
    finishing.release();
    await handOn.reached;
    handOn.fail(new Error("store unreachable"));
    await expect(cancel).rejects.toThrow("store unreachable");
    expect((await lab.store.getRun("r1"))?.status).toBe("cancelled");
    // No run of the key ends meanwhile, so no promoter passes over an entry of r1.
    expect(await drainQueue()).toEqual([]); // before: ["r1"], an ended run's entry for as long as the key is idle
    await finish("a", a);
    await finish("b", b);
  });
});
