/**
 * Faults outside the workflow's code: a journal write that fails, a lease lost mid-run. They end
 * the invocation (the transport retries it); they are never a step's failure, and user code
 * never sees them.
 */
import { describe, expect, it } from "vitest";
import { Client, createRegistry, durable, Engine, type StoredRecord, type AppendResult } from "waymark";
import { MemoryJournalStore, MemoryWakeQueue, VirtualClock } from "waymark/testing";
import { Counter, Empty } from "./helpers.ts";

function ports(store: MemoryJournalStore, workflows: Parameters<typeof createRegistry>[0]) {
  const p = { store, wakes: new MemoryWakeQueue(), clock: new VirtualClock(), workflows: createRegistry(workflows) };
  return { ...p, client: new Client(p) };
}

describe("a journal write that fails after the step ran", () => {
  it("aborts the invocation, frees the run for a retry, and is not recorded as the step failing", async () => {
    const svc = new Counter();
    const keys: string[] = [];
    const caught: unknown[] = [];
    const wf = durable({ name: "charge-once", input: Empty, retries: 1 }, async (_in, step) => {
      try {
        return await step.run("charge", ({ idempotencyKey }) => {
          keys.push(idempotencyKey);
          return svc.hit("charge");
        });
      } catch (err) {
        caught.push(err);
        return "compensated";
      }
    });
    let failNext = true;
    class FlakyStore extends MemoryJournalStore {
      override async appendRecord(runId: string, record: StoredRecord): Promise<AppendResult> {
        if (record.key === "step#charge" && failNext) {
          failNext = false;
          throw Object.assign(new Error("Throughput exceeds the current capacity"), { name: "ProvisionedThroughputExceededException" });
        }
        return super.appendRecord(runId, record);
      }
    }
    const p = ports(new FlakyStore(), [wf]);
    const engine = new Engine({ ...p, owner: "a" });
    await p.client.start(wf, { runId: "f1", input: {} });
    await expect(engine.invoke("f1")).rejects.toThrow("Throughput exceeds");
    expect(caught).toEqual([]);
    const run = await p.store.getRun("f1");
    expect(run).toMatchObject({ status: "suspended", waitingFor: "retry" });
    expect(run?.lease).toBeUndefined();
    // The retry runs the step again with the same key (the provider deduplicates), and completes.
    expect(await engine.invoke("f1")).toEqual({ status: "completed", result: 2 });
    expect(keys).toEqual(["f1/charge", "f1/charge"]);
    expect(caught).toEqual([]);
  });
});

describe("a lease lost mid-run", () => {
  it("a cancel noticed by the heartbeat aborts the running step's signal; its late result is not recorded; no further step starts", async () => {
    const started: string[] = [];
    let seen: AbortSignal | undefined;
    const p0 = { store: new MemoryJournalStore() };
    const wf = durable({ name: "cancel-mid-run", input: Empty }, async (_in, step) => {
      await step.run("reserve", async ({ signal }) => {
        started.push("reserve");
        seen = signal;
        await p.client.cancel("c1", { reason: "stop" });
        await new Promise((r) => setTimeout(r, 60)); // several heartbeats
        return "hold";
      });
      await step.run("charge", () => started.push("charge"));
      return "done";
    });
    const p = ports(p0.store, [wf]);
    const engine = new Engine({ ...p, owner: "a", leaseTtlMs: 30 });
    await p.client.start(wf, { runId: "c1", input: {} });
    expect(await engine.invoke("c1")).toEqual({ status: "cancelled", reason: "stop" });
    expect(started).toEqual(["reserve"]);
    expect(seen?.aborted).toBe(true);
    expect(seen?.reason).toMatchObject({ name: "CancelledError", reason: "stop" });
    expect((await p.store.getRun("c1"))?.status).toBe("cancelled");
    const reserve = (await p.store.loadJournal("c1"))?.records.find((r) => r.key === "step#reserve")?.body;
    expect(reserve).toMatchObject({ status: "failed", error: { name: "CancelledError" } });
  });
});
