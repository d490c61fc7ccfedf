/**
 * Issue 8, items 1 and 8: two invocations of one run at once (a process frozen past its lease
 * comes back, a zombie Lambda). Real SQLite journal, two engines with their own owners; step
 * bodies are held on gates so the interleaving is exact, and the virtual clock expires leases.
 */
import { afterEach, describe, expect, it } from "vitest";
import { durable } from "waymark";
import { Gates, within } from "../support/gates.ts";
import { type SqliteLab, sqliteLab } from "../support/sqlite-lab.ts";
import { Counter, Empty } from "../core/helpers.ts";

const TTL = 30_000;
let lab: SqliteLab;
afterEach(() => lab?.close());

describe("item 8: a zombie keeps going", () => {
  it("an invocation that loses a step's append race ends as lost-lease and runs no further step", async () => {
    const gates = new Gates();
    const shipped = new Counter();
    const flow = durable({ name: "pack-ship", input: Empty }, async (_in, step) => {
      await step.run("pack", () => gates.wait("pack"));
      return step.run("ship", ({ idempotencyKey }) => shipped.hit(idempotencyKey));
    });
    lab = sqliteLab([flow]);
    await lab.client().start(flow, { runId: "z1", input: {} });
    const a = lab.engine("A").invoke("z1");
    await gates.started("pack", 1);
    lab.clock.advance(TTL + 1); // A froze past its lease
    const b = lab.engine("B").invoke("z1");
    await gates.started("pack", 2);
    gates.open("pack", 1, "b's box");
    expect(await b).toEqual({ status: "completed", result: 1 });
    gates.open("pack", 0, "a's box"); // A thaws and tries to record pack
    expect(await within(5_000, "A", a)).toEqual({ status: "lost-lease" });
    expect(shipped.count("z1/ship")).toBe(1);
  });

  it("an invocation whose lease expired by its own clock starts no new step body", async () => {
    const gates = new Gates();
    const shipped = new Counter();
    const flow = durable({ name: "pack-ship-2", input: Empty }, async (_in, step) => {
      await step.run("pack", () => gates.wait("pack"));
      return step.run("ship", ({ idempotencyKey }) => shipped.hit(idempotencyKey));
    });
    lab = sqliteLab([flow]);
    await lab.client().start(flow, { runId: "z2", input: {} });
    const a = lab.engine("A").invoke("z2");
    await gates.started("pack", 1);
    lab.clock.advance(TTL + 1); // frozen past the lease; nobody took the run over (yet)
    gates.open("pack", 0, "box");
    expect(await within(5_000, "A", a)).toEqual({ status: "lost-lease" });
    expect(shipped.count("z2/ship")).toBe(0);
    // pack is recorded (its write-once append was not contested); the next owner ships once.
    lab.clock.advance(1);
    expect(await lab.engine("B").invoke("z2")).toEqual({ status: "completed", result: 1 });
    expect(shipped.count("z2/ship")).toBe(1);
  });
});

describe("item 1: two invocations give parallel steps the same seq", () => {
  it("the run still completes: delivery order comes from the records alone", async () => {
    const gates = new Gates();
    const tail = new Counter();
    const flow = durable({ name: "fan-out", input: Empty }, async (_in, step) => {
      const [left, right] = await Promise.all([step.run("left", () => gates.wait("left")), step.run("right", () => gates.wait("right"))]);
      const after = await step.run("after", ({ idempotencyKey }) => tail.hit(idempotencyKey));
      return { left, right, after };
    });
    lab = sqliteLab([flow]);
    await lab.client().start(flow, { runId: "f1", input: {} });
    const a = lab.engine("A").invoke("f1");
    await gates.started("left", 1);
    await gates.started("right", 1);
    lab.clock.advance(TTL + 1); // A frozen past its lease: B takes over, both now run the fan-out
    const b = lab.engine("B").invoke("f1");
    await gates.started("left", 2);
    await gates.started("right", 2);
    gates.open("right", 1, "R from B"); // B's first result: right, seq 1
    await new Promise((r) => setTimeout(r, 20));
    gates.open("left", 0, "L from A"); // A's first result: left, seq 1
    await new Promise((r) => setTimeout(r, 20));
    gates.open("right", 0, "R from A"); // A loses right's race
    gates.open("left", 1, "L from B"); // B loses left's race
    const ends = await within(5_000, "both invocations", Promise.all([a, b]));
    expect(ends).toEqual([{ status: "lost-lease" }, { status: "lost-lease" }]);
    const seqs = (await lab.client().history("f1")).entries.flatMap((e) => (e.record?.type === "step" && e.record.kind === "run" ? [[e.record.stepId, e.record.seq]] : []));
    expect(seqs).toEqual(expect.arrayContaining([["right", 1], ["left", 1]]));

    // Before: every later replay waited for a seq already consumed, for ever.
    lab.clock.advance(1);
    const c = await within(5_000, "the replay over duplicate seqs", lab.engine("C").invoke("f1"));
    expect(c).toEqual({ status: "completed", result: { left: "L from A", right: "R from B", after: 1 } });
    expect(tail.count("f1/after")).toBe(1);
  });
});
