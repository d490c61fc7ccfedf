/**
 * Steps called after awaiting concurrent steps get their ids (`save`, `save#2`) in the order the
 * awaited steps finished. Replay must release recorded results in that same order, or a branch
 * would take another branch's result (and its idempotency key).
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { type AppendResult, Client, createRegistry, durable, Engine, type StoredRecord } from "waymark";
import { MemoryJournalStore, MemoryWakeQueue, VirtualClock } from "waymark/testing";

const saves: string[] = [];
const fanout = durable({ name: "fanout-save", input: z.object({ items: z.array(z.string()) }) }, async ({ items }, step) =>
  Promise.all(
    items.map(async (item, i) => {
      // The first item is the slowest to fetch: live, the others save first.
      const fetched = await step.run("fetch", async () => {
        await new Promise((r) => setTimeout(r, (items.length - i) * 15));
        return item;
      });
      return step.run("save", ({ idempotencyKey }) => {
        saves.push(`${fetched}@${idempotencyKey}`);
        return fetched;
      });
    }),
  ),
);

describe("concurrent branches that call a step after awaiting another", () => {
  it("replay in the order they ran live: each branch keeps its own result and key across a crash", async () => {
    saves.length = 0;
    let crashed = false;
    class CrashOnce extends MemoryJournalStore {
      override async appendRecord(runId: string, record: StoredRecord): Promise<AppendResult> {
        if (record.key === "step#save#3" && !crashed) {
          crashed = true; // the process "dies" after the last save ran, before its record
          throw new Error("connection reset");
        }
        return super.appendRecord(runId, record);
      }
    }
    const store = new CrashOnce();
    const p = { store, wakes: new MemoryWakeQueue(), clock: new VirtualClock(), workflows: createRegistry([fanout]) };
    const client = new Client(p);
    await client.start(fanout, { runId: "p1", input: { items: ["a", "b", "c"] } });
    await expect(new Engine({ ...p, owner: "first" }).invoke("p1")).rejects.toThrow("connection reset");
    // Live: c then b finished fetching first, so they took `save` and `save#2`; a took `save#3`.
    expect(saves).toEqual(["c@p1/save", "b@p1/save#2", "a@p1/save#3"]);

    const result = await new Engine({ ...p, owner: "second" }).invoke("p1");
    expect(result).toEqual({ status: "completed", result: ["a", "b", "c"] });
    // Only the unrecorded save ran again, for the same item with the same key.
    expect(saves).toEqual(["c@p1/save", "b@p1/save#2", "a@p1/save#3", "a@p1/save#3"]);
  });

  it("replays a finished fan-out to the same results without running anything", async () => {
    saves.length = 0;
    const store = new MemoryJournalStore();
    const p = { store, wakes: new MemoryWakeQueue(), clock: new VirtualClock(), workflows: createRegistry([fanout]) };
    await new Client(p).start(fanout, { runId: "p2", input: { items: ["x", "y", "z", "w"] } });
    const engine = new Engine({ ...p, owner: "e" });
    const live = await engine.invoke("p2");
    expect(live).toEqual({ status: "completed", result: ["x", "y", "z", "w"] });
    const executed = saves.length;
    // Replay the whole journal again (as a new invocation of an unfinished run would).
    await store.appendRecord("p2-copy", { key: "x", body: {} }); // unrelated write: journals are per run
    const journal = await store.loadJournal("p2");
    const copy = new MemoryJournalStore();
    await copy.createRun({ runId: "p2", workflow: "fanout-save", input: { items: ["x", "y", "z", "w"] }, createdAt: 0 });
    for (const r of journal?.records ?? []) await copy.appendRecord("p2", r);
    const replay = new Engine({ store: copy, wakes: new MemoryWakeQueue(), clock: new VirtualClock(), workflows: createRegistry([fanout]), owner: "r" });
    expect(await replay.invoke("p2")).toEqual(live);
    expect(saves.length).toBe(executed);
  });
});
