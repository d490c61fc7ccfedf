/**
 * The journal rows a SQLite connection keeps in memory (lib/local/journal-rows.ts): a load
 * served from them is exactly what the file holds, whoever wrote it — this connection through
 * the store (appends alone and in batches, refused ones, a batch whose transaction fails,
 * `markLate`, `step.transact`, retention), or another connection to the same file. Each load is
 * compared with a load through a second connection that keeps nothing.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { Client, createRegistry, durable, Engine, systemClock } from "../../lib/index.ts";
import type { StoredRecord } from "../../lib/ports.ts";
import { type Database, openLocalDatabase } from "../../lib/local/database.ts";
import { createLocalRuntime } from "../../lib/local/runtime.ts";
import { AppendBatcher, WriteQueue } from "../../lib/local/sqlite-batch.ts";
import { JournalRows } from "../../lib/local/journal-rows.ts";
import { SqliteJournalStore } from "../../lib/local/sqlite-store.ts";
import { SqliteWakeTable } from "../../lib/local/wake-table.ts";

const dir = mkdtempSync(join(tmpdir(), "waymark-journal-rows-"));
let files = 0;
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Pair {
  db: Database;
  store: SqliteJournalStore;
  /** Another connection to the same file, keeping nothing: what the file holds. */
  other: Database;
  otherStore: SqliteJournalStore;
  close(): void;
}

function pair(journalCacheBytes?: number): Pair {
  const file = join(dir, `j${++files}.db`);
  const db = openLocalDatabase(file, journalCacheBytes === undefined ? {} : { journalCacheBytes });
  const other = openLocalDatabase(file, { journalCacheBytes: 0 });
  return {
    db,
    store: new SqliteJournalStore(db),
    other,
    otherStore: new SqliteJournalStore(other),
    close: () => {
      db.close();
      other.close();
    },
  };
}

const step = (i: number, result: unknown = i): StoredRecord => ({ key: `step#s${i}`, body: { type: "step", stepId: `s${i}`, result } });

/** The journal as `p.store` loads it, and as the file holds it (the other connection). */
async function both(p: Pair, runId: string) {
  const kept = await p.store.loadJournal(runId);
  const file = await p.otherStore.loadJournal(runId);
  return { kept, file };
}

async function expectExact(p: Pair, runId: string): Promise<StoredRecord[]> {
  const { kept, file } = await both(p, runId);
  expect(kept).toBeDefined();
  expect(kept).toEqual(file);
  return kept!.records;
}

async function created(p: Pair, runId: string, createdAt = 1_000): Promise<void> {
  await p.store.createRun({ runId, workflow: "w", input: null, createdAt });
}

describe("the journal rows a SQLite connection keeps", () => {
  it("serves a journal read before, with this connection's appends since, alone and in batches, byte counts included", async () => {
    const p = pair();
    await created(p, "r");
    await expectExact(p, "r");
    await p.store.appendRecord("r", step(1));
    await Promise.all([2, 3, 4].map((i) => p.store.appendRecord("r", step(i, { text: "é😀".repeat(i) }))));
    // Our own earlier write, answered again (its first answer lost): nothing new.
    expect(await p.store.appendRecord("r", step(1))).toEqual({ written: true });
    // Lost the write-once race: the stored record stands, nothing new.
    expect((await p.store.appendRecord("r", step(2, "other"))).written).toBe(false);
    const records = await expectExact(p, "r");
    expect(records.map((r) => r.key)).toEqual(["step#s1", "step#s2", "step#s3", "step#s4"]);
    p.close();
  });

  it("answers a row as the engine's own (checked) only if its append came marked so, and never a row read from the file", async () => {
    const p = pair();
    await created(p, "own");
    await expectExact(p, "own");
    await p.store.appendRecord("own", { ...step(1), checked: true });
    await p.store.appendRecord("own", step(2));
    const kept = (await p.store.loadJournal("own"))!.records;
    expect(kept.map((r) => [r.key, r.checked])).toEqual([["step#s1", true], ["step#s2", undefined]]);
    // The file has no such mark: once another connection commits, the rows read again have none.
    await p.otherStore.appendRecord("own", step(3));
    const read = (await p.store.loadJournal("own"))!.records;
    expect(read.map((r) => [r.key, r.checked])).toEqual([["step#s1", undefined], ["step#s2", undefined], ["step#s3", undefined]]);
    p.close();
  });

  it("shares one frozen body across loads only for the engine's own flat records; every other body is a fresh object each load", async () => {
    const p = pair();
    await created(p, "share");
    await expectExact(p, "share");
    await p.store.appendRecord("share", { ...step(1, 7), checked: true }); // own, flat: shared
    await p.store.appendRecord("share", { ...step(2, { n: 1 }), checked: true }); // own, an object inside
    await p.store.appendRecord("share", step(3, 7)); // flat, not marked as the engine's own
    const first = (await p.store.loadJournal("share"))!.records;
    const second = (await p.store.loadJournal("share"))!.records;
    expect(second.map((r) => r.body)).toEqual(first.map((r) => r.body));
    expect(second[0]!.body).toBe(first[0]!.body);
    expect(Object.isFrozen(first[0]!.body)).toBe(true);
    expect(() => {
      (first[0]!.body as { result: number }).result = 8;
    }).toThrow(TypeError);
    expect(second[1]!.body).not.toBe(first[1]!.body);
    expect(second[2]!.body).not.toBe(first[2]!.body);
    // What one load's reader does to its objects, the next load does not see.
    (first[1]!.body as { result: { n: number } }).result.n = 99;
    (first[2]!.body as { result: number }).result = 99;
    const third = (await p.store.loadJournal("share"))!.records;
    expect(third.map((r) => (r.body as { result: unknown }).result)).toEqual([7, { n: 1 }, 7]);
    expect(third.map((r) => r.body)).toEqual((await p.otherStore.loadJournal("share"))!.records.map((r) => r.body));
    p.close();
  });

  it("hands each replay results of its own: what replayed code does to an object result, the next replay does not see", async () => {
    const db = openLocalDatabase(join(dir, `j${++files}.db`));
    const seen: unknown[] = [];
    const wf = durable({ name: "changes-results", input: z.object({}), signals: { go: z.object({}) } }, async (_in, step) => {
      const obj = await step.run("obj", () => ({ n: 1, list: [1] }));
      const flat = await step.run("flat", () => 5);
      seen.push(structuredClone({ obj, flat }));
      obj.n++;
      obj.list.push(2);
      await step.waitForSignal("go", { timeout: "1h" });
      await step.waitForSignal("go", { timeout: "1h" });
      return obj;
    });
    const ports = { store: new SqliteJournalStore(db), wakes: new SqliteWakeTable(db), clock: systemClock, workflows: createRegistry([wf]) };
    const client = new Client(ports);
    const engine = new Engine({ ...ports, owner: "replays", leaseTtlMs: 60_000 });
    await client.start(wf, { runId: "m", input: {} });
    expect((await engine.invoke("m")).status).toBe("suspended");
    await client.signal("m", "go", {});
    expect((await engine.invoke("m")).status).toBe("suspended");
    await client.signal("m", "go", {});
    expect((await engine.invoke("m")).status).toBe("completed");
    // The live run, then two replays from the rows this connection kept: each saw the recorded values.
    expect(seen).toEqual([0, 1, 2].map(() => ({ obj: { n: 1, list: [1] }, flat: 5 })));
    expect((await client.get("m")).result).toEqual({ n: 2, list: [1, 2] });
    db.close();
  });

  it("reads the file again once another connection has committed: its appends and its markLate are seen", async () => {
    const p = pair();
    await created(p, "r");
    await p.store.appendRecord("r", step(1));
    await expectExact(p, "r");
    await p.otherStore.appendRecord("r", step(2));
    expect((await expectExact(p, "r")).map((r) => r.key)).toEqual(["step#s1", "step#s2"]);
    await p.otherStore.markLate("r", "step#s1", "w1");
    expect((await expectExact(p, "r"))[0]).toEqual({ ...step(1), lateFor: "w1" });
    p.close();
  });

  it("sees this connection's markLate, step.transact record and a refused append in a batch", async () => {
    const p = pair();
    await created(p, "r");
    await p.store.appendRecord("r", step(1));
    await expectExact(p, "r");
    await p.store.markLate("r", "step#s1", "w1");
    expect((await expectExact(p, "r"))[0]?.lateFor).toBe("w1");
    expect(await p.store.transactRecord("r", step(2), [], "req-1")).toEqual({ written: true });
    expect((await expectExact(p, "r")).map((r) => r.key)).toEqual(["step#s1", "step#s2"]);
    // One append of a batch refused by its statement: the others are kept, it is not.
    p.db.exec("CREATE TEMP TRIGGER refuse BEFORE INSERT ON records WHEN NEW.key = 'step#s4' BEGIN SELECT RAISE(ABORT, 'refused for the test'); END");
    const answers = await Promise.allSettled([3, 4, 5].map((i) => p.store.appendRecord("r", step(i))));
    expect(answers.map((a) => a.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect((await expectExact(p, "r")).map((r) => r.key)).toEqual(["step#s1", "step#s2", "step#s3", "step#s5"]);
    p.close();
  });

  it("keeps nothing of a batch whose transaction failed", async () => {
    const p = pair();
    await created(p, "r");
    await p.store.appendRecord("r", step(1));
    await expectExact(p, "r");
    // In one batch: an append, then a write that ends the transaction (as an I/O error would).
    const answers = await Promise.allSettled([
      p.store.appendRecord("r", step(2)),
      WriteQueue.of(p.db).write("r", () => {
        p.db.exec("ROLLBACK");
        throw new Error("the transaction is gone");
      }),
    ]);
    expect(answers.map((a) => a.status)).toEqual(["rejected", "rejected"]);
    expect((await expectExact(p, "r")).map((r) => r.key)).toEqual(["step#s1"]);
    p.close();
  });

  it("stays exact when a write of a batch fails after its statement changed the file: its forgetting comes after what the batch's earlier writes keep", async () => {
    const p = pair();
    // The fault: the append's read of its probe fails after its INSERT (a corrupt row, NOMEM).
    const probe = vi.spyOn(AppendBatcher.prototype as unknown as { probed: () => never }, "probed").mockImplementation(() => {
      throw new Error("the probe's read failed");
    });
    try {
      // One batch: the create (which keeps the run as empty), then the append that inserts and fails.
      const answers = await Promise.allSettled([created(p, "x"), p.store.appendRecord("x", step(1), "step#s1"), p.store.appendRecord("x", step(2))]);
      expect(answers.map((a) => a.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    } finally {
      probe.mockRestore();
    }
    // The failed append's row is in the file (its caller reads back, as after a lost answer).
    expect(await expectExact(p, "x")).toEqual([step(1), step(2)]);
    p.close();
  });

  it("does not serve a purged run's journal to the run created again under its id", async () => {
    const p = pair();
    await created(p, "r", 1_000);
    await p.store.appendRecord("r", step(1, "first run"));
    await expectExact(p, "r");
    expect(await p.store.finishRun("r", { status: "completed", now: 2_000, result: 1, expect: { neverInvoked: true } })).toBe(true);
    expect((await p.store.purgeExpired(2_000 + 31 * 86_400_000, 10)).map((r) => r.runId)).toEqual(["r"]);
    await created(p, "r", 3_000);
    expect(await expectExact(p, "r")).toEqual([]);
    await p.store.appendRecord("r", step(1, "second run"));
    expect(await expectExact(p, "r")).toEqual([step(1, "second run")]);
    p.close();
  });

  it("serves kept rows without reading the file (a change behind the store's back is not seen), and with journalCacheBytes 0 reads it every time", async () => {
    for (const budget of [undefined, 0]) {
      const p = pair(budget);
      await created(p, "r");
      await p.store.appendRecord("r", step(1));
      await p.store.loadJournal("r");
      // On the same connection, beside the store: not a write the store can see.
      p.db.prepare("UPDATE records SET body = ? WHERE run_id = 'r'").run(JSON.stringify({ type: "step", stepId: "s1", result: "changed" }));
      const records = (await p.store.loadJournal("r"))?.records;
      expect(records?.[0]?.body).toEqual({ type: "step", stepId: "s1", result: budget === 0 ? "changed" : 1 });
      p.close();
    }
  });

  it("keeps a run it created as an empty journal: the first load reads no records from the file, and stays exact", async () => {
    const p = pair();
    await created(p, "fresh");
    // Beside the store, on its own connection: were the first load to read the file, it would see this.
    p.db.prepare("INSERT INTO records (run_id, key, body) VALUES ('fresh', 'step#behind', '{}')").run();
    expect((await p.store.loadJournal("fresh"))?.records).toEqual([]);
    p.db.prepare("DELETE FROM records WHERE run_id = 'fresh'").run();
    await p.store.appendRecord("fresh", step(1));
    expect(await expectExact(p, "fresh")).toEqual([step(1)]);
    // Another connection's commit since the create: the file is read again.
    await created(p, "fresh-2");
    await p.otherStore.appendRecord("fresh-2", step(1, "theirs"));
    expect(await expectExact(p, "fresh-2")).toEqual([step(1, "theirs")]);
    // A create refused (the id is taken) keeps nothing: the journal is read as it is.
    await p.otherStore.appendRecord("fresh", step(2));
    await created(p, "fresh", 5_000);
    expect((await expectExact(p, "fresh")).map((r) => r.key)).toEqual(["step#s1", "step#s2"]);
    p.close();
  });

  it("with journalCacheBytes 0, creates a run with the insert alone: no data version read, no look for rows under its id", async () => {
    const p = pair(0);
    const version = vi.spyOn(JournalRows.prototype, "version");
    try {
      await created(p, "plain");
      expect(version).not.toHaveBeenCalled();
    } finally {
      version.mockRestore();
    }
    expect((await p.store.createRun({ runId: "plain", workflow: "w", input: null, createdAt: 2 })).created).toBe(false);
    await p.store.appendRecord("plain", step(1));
    expect(await expectExact(p, "plain")).toEqual([step(1)]);
    p.close();
  });

  it("does not keep a created run as empty when rows were already under its id (a stray append to an unknown run)", async () => {
    const p = pair();
    await p.store.appendRecord("stray", step(1, "before the run"));
    await created(p, "stray");
    expect(await expectExact(p, "stray")).toEqual([step(1, "before the run")]);
    p.close();
  });

  it("refuses a budget that is not a number of bytes, given to the database or the local runtime", () => {
    expect(() => openLocalDatabase(join(dir, `j${++files}.db`), { journalCacheBytes: -1 })).toThrow(/journalCacheBytes/);
    expect(() => createLocalRuntime({ workflows: [], file: join(dir, `j${++files}.db`), journalCacheBytes: Number.NaN })).toThrow(/journalCacheBytes/);
  });
});
