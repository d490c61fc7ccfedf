/**
 * Issue 17, the soak's finding (seed 538619573): a run holding its key's only slot learns of a
 * cancel from a journal write while a sibling branch's step function still runs. The step stops
 * waiting for that function (it is recorded as cancelled) and the run ends `cancelled` — and the
 * slot was freed then, so the next run of the key started while the first run's function was
 * still running: two bodies of a limit-1 key at once. Now the ending invocation waits (a little)
 * for the functions it stopped waiting for before it hands the slot on; one that keeps running
 * past that lets the slot lapse rather than be handed over.
 *
 * The next soak's finding (seed 1859318779): slots belong to runs, so a worker that had lost its
 * lease on r1 (it outlived it) freed, at its end, the slot that r1's next invocation held — and
 * the next run of the key started beside that invocation's body. Now a slot is freed only while
 * the invocation provably holds the lease, before the write that gives it up.
 */
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { CancelledError, durable } from "waymark";
import { Gates, within } from "../support/gates.ts";
import { type SqliteLab, sqliteLab } from "../support/sqlite-lab.ts";
import { until } from "../support/until.ts";

let lab: SqliteLab;
afterEach(() => lab?.close());

describe("a flow-control slot", () => {
  it("is not handed to the next run of its key while a cancelled run's step function still runs", async () => {
    const gates = new Gates();
    const bodies: string[] = [];
    const running = new Set<string>();
    let runsAtOnce = 0;
    const body = (label: string) => async () => {
      bodies.push(label);
      running.add(label);
      runsAtOnce = Math.max(runsAtOnce, new Set([...running].map((b) => b.split("/")[0])).size);
      try {
        // Ignores its abort signal: it goes on until the test lets it finish.
        return await gates.wait(label);
      } finally {
        running.delete(label);
      }
    };
    const flow = durable({ name: "limited", input: z.object({ key: z.string() }), concurrency: { key: (i) => i.key, limit: 1 } }, async (_in, step) => {
      const id = step.runId;
      try {
        await Promise.all([step.run("a", body(`${id}/a`)), step.run("b", body(`${id}/b`))]);
        return "done";
      } catch (err) {
        if (err instanceof CancelledError) return "stopped";
        throw err;
      }
    });
    lab = sqliteLab([flow]);
    const client = lab.client();
    await client.start(flow, { runId: "r1", input: { key: "k" } });
    await client.start(flow, { runId: "r2", input: { key: "k" } });
    // A lease of ten minutes: no heartbeat is involved; r1 holds the slot, r2 queues behind it.
    const first = lab.engine("W1", lab.store, { leaseTtlMs: 600_000 }).invoke("r1");
    await gates.started("r1/a");
    await gates.started("r1/b");
    expect(await lab.engine("W2", lab.store, { leaseTtlMs: 600_000 }).invoke("r2")).toMatchObject({ status: "queued" });
    expect(await client.cancel("r1", { reason: "stop" })).toEqual({ outcome: "requested", status: "running" });
    // a's record learns of the cancel: b's step stops waiting for its function, r1 ends.
    gates.open("r1/a", 0, "A");
    await until("r1 cancelled", async () => (await lab.store.getRun("r1"))?.status === "cancelled");
    expect(running).toEqual(new Set(["r1/b"]));
    // r1's function b still runs: the slot is not r2's yet.
    const retry = lab.engine("W3", lab.store, { leaseTtlMs: 600_000 }).invoke("r2");
    const r2Started = until("r2 to start a body", () => bodies.some((b) => b.startsWith("r2/")) && ("started a body" as const));
    expect(await Promise.race([retry, r2Started])).toMatchObject({ status: "queued" });
    expect(bodies.filter((b) => b.startsWith("r2/"))).toEqual([]);
    // b's function ends: the invocation hands the slot on, and r2 runs.
    gates.open("r1/b", 0, "B");
    expect(await within(60_000, "r1's invocation", first)).toMatchObject({ status: "cancelled" });
    const second = lab.engine("W4", lab.store, { leaseTtlMs: 600_000 }).invoke("r2");
    await gates.started("r2/a");
    await gates.started("r2/b");
    gates.open("r2/a", 0, "A");
    gates.open("r2/b", 0, "B");
    expect(await within(60_000, "r2's invocation", second)).toEqual({ status: "completed", result: "done" });
    expect(runsAtOnce).toBe(1); // never bodies of two runs of the key at once
  });

  it("is not freed by an invocation that lost the run's lease: the run's next invocation keeps it", async () => {
    const gates = new Gates();
    const bodies: string[] = [];
    const flow = durable({ name: "limited2", input: z.object({ key: z.string() }), concurrency: { key: (i) => i.key, limit: 1 } }, async (_in, step) => {
      const label = step.runId;
      await step.run("a", async () => (bodies.push(`${label}/a`), gates.wait(`${label}/a`)));
      await step.run("b", () => "b");
      return "done";
    });
    lab = sqliteLab([flow]);
    const client = lab.client();
    await client.start(flow, { runId: "r1", input: { key: "k" } });
    await client.start(flow, { runId: "r2", input: { key: "k" } });
    // Worker A runs r1 and holds the slot; r2 queues.
    const a = lab.engine("A", lab.store, { leaseTtlMs: 30_000 }).invoke("r1");
    await gates.started("r1/a");
    expect(await lab.engine("Q", lab.store, { leaseTtlMs: 30_000 }).invoke("r2")).toMatchObject({ status: "queued" });
    // A outlives its lease (frozen): worker B takes r1 over, keeps r1's slot, and runs a again.
    lab.clock.advance(31_000);
    const b = lab.engine("B", lab.store, { leaseTtlMs: 600_000 }).invoke("r1");
    await gates.started("r1/a", 2);
    // A thaws: its body ends, it learns the lease is gone, and ends without freeing the slot.
    gates.open("r1/a", 0, "first");
    expect(await within(60_000, "worker A", a)).toEqual({ status: "lost-lease" });
    // B's body of a still runs: r2 must not get the slot.
    const retry = lab.engine("Q2", lab.store, { leaseTtlMs: 30_000 }).invoke("r2");
    const r2Started = until("r2 to start a body", () => bodies.includes("r2/a") && ("started a body" as const));
    expect(await Promise.race([retry, r2Started])).toMatchObject({ status: "queued" });
    expect(bodies).toEqual(["r1/a", "r1/a"]);
    gates.open("r1/a", 1, "second");
    expect(await within(60_000, "worker B", b)).toMatchObject({ status: "lost-lease" }); // A recorded a first
  });
});
