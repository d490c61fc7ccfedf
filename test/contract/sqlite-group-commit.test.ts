/**
 * Group commit on the SQLite journal (lib/local/sqlite-batch.ts): writes made together share one
 * commit (appends, and grants, finishes and wakes beside them), and every append keeps its own
 * answer — won or the record that stands, the probe as its transaction saw it, and a failure of
 * its own that does not fail its neighbours. The
 * commits are counted from the WAL (frames written, checkpoints off), on a real file; the
 * durability option sets SQLite's `synchronous`.
 */
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { type Database, openLocalDatabase } from "../../lib/local/database.ts";
import { SqliteJournalStore } from "../../lib/local/sqlite-store.ts";
import { SqliteWakeTable } from "../../lib/local/wake-table.ts";

const dir = mkdtempSync(join(tmpdir(), "waymark-group-commit-"));
let files = 0;
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function open(durability?: "normal" | "full"): { db: Database; store: SqliteJournalStore } {
  // Checkpoints inline and then off: the WAL only grows, and its frames count the commits.
  const db = openLocalDatabase(join(dir, `g${++files}.db`), { checkpoints: "inline", ...(durability ? { durability } : {}) });
  db.pragma("wal_autocheckpoint = 0");
  return { db, store: new SqliteJournalStore(db) };
}

/** Frames in the WAL since the last call (a commit of a few small records writes a few). */
function framesSince(db: Database): () => number {
  const frames = () => (db.pragma("wal_checkpoint(PASSIVE)") as Array<{ log: number }>)[0]?.log ?? 0;
  const before = frames();
  return () => frames() - before;
}

const body = (i: number) => ({ type: "step", result: i });

describe("SQLite group commit", () => {
  it("writes appends made together in one commit, and sequential appends in one commit each", async () => {
    const { db, store } = open();
    let frames = framesSince(db);
    const together = await Promise.all(Array.from({ length: 50 }, (_, i) => store.appendRecord("together", { key: `step#s${i}`, body: body(i) })));
    expect(together.every((r) => r.written)).toBe(true);
    const batched = frames();
    frames = framesSince(db);
    for (let i = 0; i < 50; i++) await store.appendRecord("apart", { key: `step#s${i}`, body: body(i) });
    const apart = frames();
    // 50 commits rewrite the same leaf pages 50 times; one commit writes each page once.
    expect(apart).toBeGreaterThanOrEqual(50);
    expect(batched).toBeLessThanOrEqual(5);
    expect(db.prepare("SELECT count(*) FROM records WHERE run_id = 'together'").pluck().get()).toBe(50);
    db.close();
  });

  it("answers each append of a batch on its own: write-once within the batch, the probe in its place, and a refusal that fails only its own append", async () => {
    const { db, store } = open();
    await store.appendRecord("r", { key: "step#old", body: body(0) });
    // A statement-level refusal (as a constraint would be) for one key only.
    db.exec("CREATE TEMP TRIGGER refuse BEFORE INSERT ON records WHEN NEW.key = 'step#bad' BEGIN SELECT RAISE(ABORT, 'refused for the test'); END");
    const answers = await Promise.allSettled([
      store.appendRecord("r", { key: "step#a", body: body(1) }, "cancel"),
      store.appendRecord("r", { key: "step#a", body: body(2) }, "cancel"), // same key, other body: loses to the first
      store.appendRecord("r", { key: "step#old", body: body(0) }), // already there, same body: our own write
      store.appendRecord("r", { key: "step#bad", body: body(3) }),
      store.appendRecord("r", { key: "cancel", body: { type: "cancel", reason: "stop" } }),
      store.appendRecord("r", { key: "step#b", body: body(4) }, "cancel"),
    ]);
    const [a1, a2, old, bad, cancel, b] = answers;
    // The transaction writes the batch in order: a probe sees what precedes its append in it.
    expect(a1).toEqual({ status: "fulfilled", value: { written: true, probed: null } });
    expect(a2).toEqual({ status: "fulfilled", value: { written: false, existing: { key: "step#a", body: body(1) }, probed: null } });
    expect(old).toEqual({ status: "fulfilled", value: { written: true } });
    expect(bad.status).toBe("rejected");
    expect(String((bad as PromiseRejectedResult).reason)).toContain("refused for the test");
    expect(cancel).toEqual({ status: "fulfilled", value: { written: true } });
    expect(b).toEqual({ status: "fulfilled", value: { written: true, probed: { key: "cancel", body: { type: "cancel", reason: "stop" } } } });
    const keys = db.prepare("SELECT key FROM records WHERE run_id = 'r' ORDER BY rowid").pluck().all();
    expect(keys).toEqual(["step#old", "step#a", "cancel", "step#b"]);
    // Alone (a batch of one), the probe answers from the same statement as the write.
    expect(await store.appendRecord("r", { key: "step#c", body: body(5) }, "cancel")).toEqual({ written: true, probed: { key: "cancel", body: { type: "cancel", reason: "stop" } } });
    expect(await store.appendRecord("other", { key: "step#c", body: body(5) }, "cancel")).toEqual({ written: true, probed: null });
    db.close();
  });

  it("shares one commit among writes of every kind made together, runs' and wakes': grants, appends, finishes, schedules and acks", async () => {
    const { db, store } = open();
    const wakes = new SqliteWakeTable(db);
    const ids = Array.from({ length: 20 }, (_, i) => `run-${i}`);
    const now = 1_000;
    for (const runId of ids) await store.createRun({ runId, workflow: "w", input: { runId }, createdAt: now });
    // Each run: granted, one record, finished, and a wake scheduled and acked; the twenty runs at once.
    const lifecycle = async (runId: string) => {
      const granted = await store.acquireLease(runId, { owner: `o-${runId}`, now, ttlMs: 60_000 });
      if (!granted.acquired) throw new Error(`no lease for ${runId}`);
      const appended = await store.appendRecord(runId, { key: "step#s", body: body(1) }, "cancel");
      const finished = await store.finishRun(runId, { status: "completed", now: now + 1, result: runId, expect: { token: granted.lease.token } });
      await wakes.schedule({ runId, at: now, reason: "start", key: "start" });
      return { appended, finished };
    };
    // Then the wakes, claimed and each acked.
    const drain = async () => Promise.all((await wakes.claimDue(now, 100, 1_000)).map((w) => wakes.ack(w)));
    let frames = framesSince(db);
    const together = await Promise.all(ids.map(lifecycle));
    expect((await drain()).length).toBe(20);
    const batched = frames();
    expect(together.every((r) => r.appended.written && r.appended.probed === null && r.finished)).toBe(true);
    for (const runId of ids) expect(await store.getRun(runId)).toMatchObject({ status: "completed", result: runId, leaseToken: 1 });
    expect(await wakes.nextDueAt()).toBeUndefined();
    // The same writes one run after the other: each its own commit (a grant alone rewrites the runs table's pages).
    const apart = ids.map((id) => `${id}-apart`);
    for (const runId of apart) await store.createRun({ runId, workflow: "w", input: { runId }, createdAt: now });
    frames = framesSince(db);
    for (const runId of apart) {
      await lifecycle(runId);
      expect((await drain()).length).toBe(1);
    }
    const alone = frames();
    expect(alone).toBeGreaterThanOrEqual(20 * 5);
    expect(batched).toBeLessThan(alone / 4);
    db.close();
  });

  it("waits for the end of the event loop's turn while several runs write, and goes back to the microtask rule for a run alone", async () => {
    const file = join(dir, `g${++files}.db`);
    const db = openLocalDatabase(file, { checkpoints: "inline" });
    db.pragma("wal_autocheckpoint = 0");
    const store = new SqliteJournalStore(db);
    // Frames from the WAL file's size (no checkpoint runs, so it only grows).
    const pageSize = db.pragma("page_size", { simple: true }) as number;
    const walFrames = () => (statSync(`${file}-wal`).size - 32) / (pageSize + 24);
    const framesSince = (_: Database) => {
      const before = walFrames();
      return () => walFrames() - before;
    };
    // Two runs stepping at once but out of phase (b's steps take a few more microtask turns, as a
    // read or a hook would): their appends never arrive in one microtask burst.
    const chain = async (runId: string, gap: number, n: number) => {
      for (let i = 0; i < n; i++) {
        for (let g = 0; g < gap; g++) await null;
        await store.appendRecord(runId, { key: `step#s${i}`, body: body(i) });
      }
    };
    let frames = framesSince(db);
    for (let i = 0; i < 20; i++) await store.appendRecord("alone", { key: `step#s${i}`, body: body(i) });
    const apart = frames();
    frames = framesSince(db);
    await Promise.all([chain("a", 0, 10), chain("b", 6, 10)]);
    const together = frames();
    // Commits at the end of the turn take both runs' appends: about half the commits of 20 apart.
    expect(together).toBeLessThan(apart * 0.75);
    expect(db.prepare("SELECT count(*) FROM records WHERE run_id IN ('a', 'b')").pluck().get()).toBe(20);
    // A run alone again: its first append may wait for the turn's end, then none yields to the event loop.
    await store.appendRecord("solo", { key: "step#first", body: body(0) });
    let yielded = false;
    setImmediate(() => (yielded = true));
    frames = framesSince(db);
    for (let i = 0; i < 20; i++) await store.appendRecord("solo", { key: `step#s${i}`, body: body(i) });
    expect(yielded).toBe(false);
    expect(frames()).toBeGreaterThanOrEqual(20); // each its own commit
    db.close();
  });

  it("a commit that fails fails every append of its batch, and nothing of it is kept", async () => {
    const { db, store } = open();
    // A refusal that ends the whole transaction (ROLLBACK), as an I/O error would.
    db.exec("CREATE TEMP TRIGGER doom BEFORE INSERT ON records WHEN NEW.key = 'step#doom' BEGIN SELECT RAISE(ROLLBACK, 'the transaction is gone'); END");
    const answers = await Promise.allSettled([1, 2, 3].map((i) => store.appendRecord("r", { key: i === 2 ? "step#doom" : `step#${i}`, body: body(i) })));
    expect(answers.map((a) => a.status)).toEqual(["rejected", "rejected", "rejected"]);
    expect(db.prepare("SELECT count(*) FROM records").pluck().get()).toBe(0);
    expect(db.inTransaction).toBe(false);
    expect(await store.appendRecord("r", { key: "step#1", body: body(1) })).toEqual({ written: true });
    db.close();
  });

  it("durability sets SQLite's synchronous mode, and refuses an unknown one", () => {
    expect(open().db.pragma("synchronous", { simple: true })).toBe(1); // NORMAL
    expect(open("normal").db.pragma("synchronous", { simple: true })).toBe(1);
    expect(open("full").db.pragma("synchronous", { simple: true })).toBe(2); // FULL
    expect(() => openLocalDatabase(join(dir, "bad.db"), { durability: "paranoid" as "full" })).toThrow(/durability must be "normal" or "full"/);
  });
});

describe("the local runtime's durability option", () => {
  it("opens its journal file in the mode asked for, NORMAL by default", async () => {
    const { createLocalRuntime } = await import("../../lib/local/runtime.ts");
    for (const [durability, expected] of [[undefined, 1], ["normal", 1], ["full", 2]] as const) {
      const file = join(dir, `rt${++files}.db`);
      const rt = createLocalRuntime({ workflows: [], file, ...(durability ? { durability } : {}) });
      // The mode is per connection: ask the runtime's own.
      expect((rt as unknown as { db: Database }).db.pragma("synchronous", { simple: true })).toBe(expected);
      await rt.close();
    }
  });
});
