import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import BetterSqlite3 from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { openLocalDatabase } from "../../lib/local/database.ts";
import { SqliteJournalStore } from "../../lib/local/sqlite-store.ts";
import { SqliteWakeTable } from "../../lib/local/wake-table.ts";
import { T, freshId } from "./helpers.ts";
import { journalStoreContract, journalWakeQueueContract } from "./store-contract.ts";

const dir = mkdtempSync(join(tmpdir(), "waymark-sqlite-"));
const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
let files = 0;
const newFile = (): string => join(dir, `j${++files}`, "journal.db");

afterAll(() => rmSync(dir, { recursive: true, force: true }));

journalStoreContract("sqlite", async () => {
  const db = openLocalDatabase(newFile());
  return { store: new SqliteJournalStore(db), close: async () => void db.close() };
});

journalWakeQueueContract("sqlite", async () => {
  const db = openLocalDatabase(newFile());
  return { queue: new SqliteWakeTable(db), close: async () => void db.close() };
});

describe("SQLite journal file", () => {
  it("is created with its folder, in WAL mode, at schema version 4, and opens again unchanged", () => {
    const file = newFile();
    const db = openLocalDatabase(file);
    expect(db.pragma("journal_mode", { simple: true })).toBe("wal");
    expect(db.pragma("synchronous", { simple: true })).toBe(1); // NORMAL
    expect(db.pragma("busy_timeout", { simple: true })).toBe(5000);
    expect(db.pragma("user_version", { simple: true })).toBe(4);
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").pluck().all();
    expect(tables).toEqual(["flow_latest", "flow_queue", "flow_slots", "records", "runs", "wake_generation", "wakes"]);
    db.close();
    const again = openLocalDatabase(file);
    expect(again.pragma("user_version", { simple: true })).toBe(4);
    again.close();
  });

  it("refuses a file written by a newer schema version", () => {
    const file = newFile();
    openLocalDatabase(file).close();
    const raw = new BetterSqlite3(file);
    raw.pragma("user_version = 5");
    raw.close();
    expect(() => openLocalDatabase(file)).toThrow(/schema version 5.*reads up to 4/);
  });

  it("keeps runs, records, leases and wakes across close and reopen", async () => {
    const file = newFile();
    const runId = freshId("reopen");
    let db = openLocalDatabase(file);
    let store = new SqliteJournalStore(db);
    let wakes = new SqliteWakeTable(db);
    await store.createRun({ runId, workflow: "order-flow", input: { sku: "A1" }, createdAt: T });
    const lease = await store.acquireLease(runId, { owner: "owner-a", now: T + 1, ttlMs: 30_000 });
    await store.appendRecord(runId, { key: "step#reserve", body: { hold: "h-1", n: [1, 2.5] } });
    await store.appendRecord(runId, { key: "signal#s-1", body: { late: true } });
    await store.markLate(runId, "signal#s-1", "approval");
    await wakes.schedule({ runId, at: T + 100, reason: "sleep", key: "sleep:nap" });
    const [claimed] = await wakes.claimDue(T + 100, 10, 5_000);
    const before = await store.loadJournal(runId);
    db.close();

    db = openLocalDatabase(file);
    store = new SqliteJournalStore(db);
    wakes = new SqliteWakeTable(db);
    expect(await store.loadJournal(runId)).toEqual(before);
    expect(before?.run.lease).toEqual(lease.acquired ? lease.lease : undefined);
    expect(before?.records).toHaveLength(2);
    // The claim survived too: hidden until its visibility timeout, then back with its generation.
    expect(await wakes.nextDueAt()).toBe(T + 5_100);
    expect(await wakes.claimDue(T + 5_100, 10, 5_000)).toEqual([claimed]);
    db.close();
  });

  it("two connections on one file: one lease, one record, one claim", async () => {
    const file = newFile();
    const [a, b] = [openLocalDatabase(file), openLocalDatabase(file)];
    const [storeA, storeB] = [new SqliteJournalStore(a), new SqliteJournalStore(b)];
    const runId = freshId("two-connections");
    await storeA.createRun({ runId, workflow: "order-flow", input: {}, createdAt: T });
    expect((await storeB.createRun({ runId, workflow: "order-flow", input: {}, createdAt: T })).created).toBe(false);

    const leases = await Promise.all([
      storeA.acquireLease(runId, { owner: "a", now: T, ttlMs: 30_000 }),
      storeB.acquireLease(runId, { owner: "b", now: T, ttlMs: 30_000 }),
    ]);
    expect(leases.filter((l) => l.acquired)).toHaveLength(1);
    const appends = await Promise.all([
      storeA.appendRecord(runId, { key: "step#charge", body: { by: "a" } }),
      storeB.appendRecord(runId, { key: "step#charge", body: { by: "b" } }),
    ]);
    const winner = appends[0]?.written ? "a" : "b";
    expect(appends.filter((r) => r.written)).toHaveLength(1);
    expect(appends.find((r) => !r.written)).toEqual({ written: false, existing: { key: "step#charge", body: { by: winner } } });
    expect((await storeA.loadJournal(runId))?.records).toEqual([{ key: "step#charge", body: { by: winner } }]);

    const [wakesA, wakesB] = [new SqliteWakeTable(a), new SqliteWakeTable(b)];
    await wakesA.schedule({ runId, at: T, reason: "start", key: "start" });
    expect(await wakesA.claimDue(T, 10, 30_000)).toHaveLength(1);
    expect(await wakesB.claimDue(T, 10, 30_000)).toEqual([]);
    a.close();
    b.close();
  });

  it("three processes racing on one file: exactly one lease and one record per run", async () => {
    const file = newFile();
    const prefix = freshId("race");
    const count = 200;
    const setup = openLocalDatabase(file);
    const store = new SqliteJournalStore(setup);
    for (let i = 0; i < count; i++) await store.createRun({ runId: `${prefix}-${i}`, workflow: "order-flow", input: {}, createdAt: T });

    const racers = ["p1", "p2", "p3"].map((owner) => startRacer(file, owner, prefix, count));
    await Promise.all(racers.map((r) => r.ready));
    for (const r of racers) r.go();
    const reports = await Promise.all(racers.map((r) => r.done));

    for (let i = 0; i < count; i++) {
      const runId = `${prefix}-${i}`;
      const outcomes = reports.map((rep) => ({ owner: rep.owner, ...rep.results[i] }));
      expect(outcomes.every((o) => o.runId === runId)).toBe(true);
      expect(outcomes.filter((o) => o.leased), runId).toHaveLength(1);
      const writers = outcomes.filter((o) => o.wrote);
      expect(writers, runId).toHaveLength(1);
      const body = { owner: writers[0]?.owner };
      for (const o of outcomes) if (!o.wrote) expect(o.sawBody).toEqual(body);
      const journal = await store.loadJournal(runId);
      expect(journal?.records).toEqual([{ key: "step#charge", body }]);
      expect(journal?.run).toMatchObject({ leaseToken: 1, invocations: 1 });
    }
    setup.close();
  });
});

interface RacerReport {
  owner: string;
  results: Array<{ runId: string; leased: boolean; wrote: boolean; sawBody?: unknown }>;
}

/** Starts `sqlite-racer.ts` in its own process; it waits for `go()` once `ready` resolves. */
function startRacer(file: string, owner: string, prefix: string, count: number) {
  const child = spawn(process.execPath, ["--import", "tsx", join(ROOT, "test/contract/sqlite-racer.ts"), file, owner, prefix, String(count)], {
    cwd: ROOT,
    stdio: ["pipe", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  let signalReady: () => void = () => {};
  const ready = new Promise<void>((resolve) => (signalReady = resolve));
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
    out += chunk;
    if (out.startsWith("ready\n")) signalReady();
  });
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (err += chunk));
  const done = new Promise<RacerReport>((resolve, reject) => {
    child.on("error", reject);
    child.on("exit", (code) => {
      signalReady();
      if (code !== 0) return reject(new Error(`racer ${owner} exited with ${code}: ${err}`));
      resolve(JSON.parse(out.slice("ready\n".length)) as RacerReport);
    });
  });
  return { ready, done, go: () => child.stdin.end("go\n") };
}

describe("the local runtime's watchdog and retention", () => {
  it("deletes a purged run's values stored by reference with it (the directory beside the file)", async () => {
    const { createLocalRuntime } = await import("../../lib/local/runtime.ts");
    const { durable } = await import("../../lib/durable.ts");
    const { z } = await import("zod");
    const { existsSync, readdirSync } = await import("node:fs");
    const { until } = await import("../support/until.ts");
    const flow = durable({ name: "big-short-lived", input: z.object({}) }, async (_in, step) => step.run("blob", () => "b".repeat(100 * 1024)).then((b) => b.length));
    const file = newFile();
    const runtime = createLocalRuntime({ workflows: [flow], file, payloads: true, retentionDays: 300 / 86_400_000, watchdogIntervalMs: 50 });
    runtime.start();
    try {
      await runtime.client.start(flow, { runId: "blob-1", input: {} });
      await until("blob-1 to complete", async () => ((await runtime.store.getRun("blob-1"))?.status === "completed" ? true : undefined));
      const runDir = join(`${file}.payloads`, "runs", "blob-1");
      expect(readdirSync(runDir)).toHaveLength(1); // one incarnation's folder, holding the 100 KiB result
      await until("blob-1 and its payloads to be purged", async () => ((await runtime.store.getRun("blob-1")) === undefined && readdirSync(runDir).length === 0 ? true : undefined), 10_000);
      expect(existsSync(`${file}.payloads`)).toBe(true);
    } finally {
      await runtime.close();
    }
  });

  it("deletes a finished run once its retention has passed, with its records and wakes; the id then starts afresh", async () => {
    const { createLocalRuntime } = await import("../../lib/local/runtime.ts");
    const { durable } = await import("../../lib/durable.ts");
    const { z } = await import("zod");
    const flow = durable({ name: "short-lived", input: z.object({ n: z.number() }) }, async (input, step) => step.run("double", () => input.n * 2));
    const file = newFile();
    // Retention of 300 ms, a watchdog tick every 50 ms.
    const runtime = createLocalRuntime({ workflows: [flow], file, retentionDays: 300 / 86_400_000, watchdogIntervalMs: 50 });
    runtime.start();
    try {
      await runtime.client.start(flow, { runId: "short-1", input: { n: 2 } });
      const { until } = await import("../support/until.ts");
      const done = await until("short-1 to complete", async () => {
        const journal = await runtime.store.loadJournal("short-1");
        return journal?.run.status === "completed" ? journal : undefined;
      });
      expect(done.records.map((r) => r.key)).toContain("step#double");
      await until("short-1 to be purged", async () => ((await runtime.store.getRun("short-1")) === undefined ? true : undefined), 10_000);
      const raw = new BetterSqlite3(file, { readonly: true });
      for (const table of ["runs", "records", "wakes"]) expect(raw.prepare(`SELECT count(*) AS n FROM ${table} WHERE run_id = 'short-1'`).get()).toEqual({ n: 0 });
      raw.close();
      const again = await runtime.client.start(flow, { runId: "short-1", input: { n: 5 } });
      expect(again.created).toBe(true);
      const result = await until("short-1 to complete again", async () => {
        const run = await runtime.store.getRun("short-1");
        return run?.status === "completed" ? { value: run.result } : undefined;
      });
      expect(result.value).toBe(10);
    } finally {
      await runtime.close();
    }
  });
});
