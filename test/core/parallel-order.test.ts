/**
 * Steps called after awaiting concurrent steps get their ids (`save`, `save#2`) in the order the
 * awaited steps finished. Replay must release recorded results in that same order, or a branch
 * would take another branch's result (and its idempotency key).
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { type AppendResult, Client, createRegistry, durable, Engine, type StoredRecord } from "waymark";
import { MemoryJournalStore, MemoryWakeQueue, VirtualClock } from "waymark/testing";
import { timelineRows } from "../../lib/cli/timeline.ts";

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

/**
 * Simulator seed 177154612. Two invocations of one run write a record at the same delivery
 * position, neither seeing the other's: an invocation that lost its lease ends a body it was
 * running, and the invocation that took the lease records a sibling's failure there and goes on
 * from it (here, to what it does after a failed fan-out; in the seed, a saga's compensation).
 * Replay must deliver the lease holder's record first, as it ran: delivering the earlier
 * writer's first (it was written first) takes the branch the holder never took.
 */
describe("two invocations that recorded one delivery position", () => {
  const slowBodies: Array<() => void> = [];
  const failBodies: Array<(err: Error) => void> = [];
  const tie = durable({ name: "tie-break", input: z.object({}), retries: 1 }, async (_in, step) => {
    const done: string[] = [];
    try {
      await Promise.all([
        step.run("a-slow", () => new Promise<string>((resolve) => slowBodies.push(() => resolve("slow")))).then((v) => void done.push(v)),
        step.run("b-fails", () => new Promise<string>((_resolve, reject) => failBodies.push(reject))),
      ]);
      return { undone: [] as string[] };
    } catch {
      const undone: string[] = [];
      for (const d of [...done].reverse()) undone.push(await step.run(`undo-${d}`, () => d));
      return { undone, after: await step.run("after", () => undone.length) };
    }
  });
  const until = async (check: () => boolean | Promise<boolean>) => {
    while (!(await check())) await new Promise((r) => setTimeout(r, 2));
  };

  it("replays the holder's record first, the way it went on", { timeout: 15_000 }, async () => {
    const store = new MemoryJournalStore();
    const clock = new VirtualClock();
    const p = { store, wakes: new MemoryWakeQueue(), clock, workflows: createRegistry([tie]) };
    await new Client(p).start(tie, { runId: "t1", input: {} });
    // A starts both bodies, then stalls; B takes the lease from it (A is thought dead) and starts both again.
    void new Engine({ ...p, owner: "A" }).invoke("t1").catch(() => {});
    await until(() => slowBodies.length === 1 && failBodies.length === 1);
    const holder = new Engine({ ...p, owner: "B" }).invoke("t1", { mayBreak: () => true });
    await until(() => slowBodies.length === 2 && failBodies.length === 2);
    // A's slow body ends: its record takes position 1 (A never saw B's lease).
    slowBodies[0]?.();
    await until(async () => (await store.getRecord("t1", "step#a-slow")) !== undefined);
    // B's sibling fails a moment later, at position 1 too; B goes on with nothing to undo.
    clock.advance(5);
    failBodies[1]?.(new Error("declined"));
    await until(async () => (await store.getRecord("t1", "step#after")) !== undefined);
    const journal = await store.loadJournal("t1");
    const seqOf = (key: string) => (journal?.records.find((r) => r.key === key)?.body as { seq?: number } | undefined)?.seq;
    expect([seqOf("step#a-slow"), seqOf("step#b-fails"), seqOf("step#after")]).toEqual([1, 1, 2]);
    // B's own slow body ends: A's record is there, so B stops (another invocation wrote a step it ran).
    slowBodies[1]?.();
    expect(await holder).toEqual({ status: "lost-lease" });

    // The next invocation replays the journal and must take the path B took.
    expect(await new Engine({ ...p, owner: "C" }).invoke("t1")).toEqual({ status: "completed", result: { undone: [], after: 0 } });
  });
});

/**
 * Simulator seed 2013304793. An invocation that lost its lease ends a body after the holder had
 * gone on without it: the holder recorded a sibling's failure at the same delivery position, then
 * its compensations. Delivering the late result right after the sibling (as a tie) let its
 * continuation register an undo that the compensation, popping the newest first, ran instead of
 * the holder's recorded one: NonDeterminismError. The holder never saw it: it is delivered after
 * every recorded position, and where is journaled (`place#<stepId>`) before any code runs.
 */
describe("a result that lands after the holder went on without it", () => {
  const slowBodies: Array<() => void> = [];
  const failBodies: Array<(err: Error) => void> = [];
  const late = durable({ name: "late-result", input: z.object({}), retries: 1 }, async (_in, step) => {
    const saga = step.saga();
    for (const leg of ["0", "1"]) {
      await step.run(`book${leg}`, () => leg);
      saga.add(`unbook${leg}`, () => leg);
    }
    try {
      await Promise.all([
        step.run("a-slow", () => new Promise<string>((resolve) => slowBodies.push(() => resolve("slow")))).then(() => saga.add("undo-a", () => "a")),
        step.run("b-fails", () => new Promise<string>((_resolve, reject) => failBodies.push(reject))),
      ]);
      return "booked";
    } catch {
      await saga.compensate();
      await step.sleep("cool-off", 1_000);
      return step.run("after", () => "compensated");
    }
  });
  const until = async (check: () => boolean | Promise<boolean>) => {
    while (!(await check())) await new Promise((r) => setTimeout(r, 2));
  };

  it("delivers it after every recorded position, journals where, and replays the holder's compensations", { timeout: 15_000 }, async () => {
    const store = new MemoryJournalStore();
    const clock = new VirtualClock();
    const p = { store, wakes: new MemoryWakeQueue(), clock, workflows: createRegistry([late]) };
    await new Client(p).start(late, { runId: "l1", input: {} });
    // A books both legs, starts both bodies, then stalls; B takes the lease and starts them again.
    void new Engine({ ...p, owner: "A" }).invoke("l1").catch(() => {});
    await until(() => slowBodies.length === 1 && failBodies.length === 1);
    const holder = new Engine({ ...p, owner: "B" }).invoke("l1", { mayBreak: () => true });
    await until(() => slowBodies.length === 2 && failBodies.length === 2);
    // B's sibling fails: B records it, compensates both legs, and waits for its own slow body.
    failBodies[1]?.(new Error("declined"));
    await until(async () => (await store.getRecord("l1", "step#unbook0")) !== undefined);
    // A's slow body ends now: its record lands at B's sibling's position, after B's compensations.
    slowBodies[0]?.();
    await until(async () => (await store.getRecord("l1", "step#a-slow")) !== undefined);
    slowBodies[1]?.();
    expect(await holder).toEqual({ status: "lost-lease" });
    const seqOf = async (key: string) => ((await store.getRecord("l1", key))?.body as { seq?: number } | undefined)?.seq;
    expect([await seqOf("step#b-fails"), await seqOf("step#a-slow"), await seqOf("step#unbook1"), await seqOf("step#unbook0")]).toEqual([3, 3, 4, 5]);

    // C replays B's path (unbook1, then unbook0), then gets the late result, and sleeps.
    expect(await new Engine({ ...p, owner: "C" }).invoke("l1")).toMatchObject({ status: "suspended" });
    expect((await store.getRecord("l1", "place#a-slow"))?.body).toMatchObject({ type: "place", stepId: "a-slow", seq: 6 });
    clock.advance(1_000);
    expect(await new Engine({ ...p, owner: "D" }).invoke("l1")).toEqual({ status: "completed", result: "compensated" });
    // What the history shows: B's compensations, and the late result no compensation covers.
    const keys = (await store.loadJournal("l1"))?.records.map((r) => r.key) ?? [];
    expect(keys.filter((k) => k.startsWith("step#un") || k.startsWith("step#undo"))).toEqual(["step#unbook1", "step#unbook0"]);
    const { entries } = await new Client(p).history("l1");
    expect(timelineRows(entries).find((r) => r.step === "a-slow")?.status).toBe("ok, late");
  });
});
