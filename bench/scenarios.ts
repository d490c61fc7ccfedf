/**
 * The measurements, one function each. Every function returns milliseconds for one repetition
 * and leaves setup (opening files, preparing journals) outside the timed part.
 */
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "../lib/client.ts";
import { Engine, type InvocationResult } from "../lib/core/engine.ts";
import { JournalView } from "../lib/core/journal-view.ts";
import { createRegistry } from "../lib/core/registry.ts";
import { createLocalRuntime } from "../lib/local/runtime.ts";
import { openLocalDatabase } from "../lib/local/database.ts";
import { SqliteJournalStore } from "../lib/local/sqlite-store.ts";
import { SqliteWakeTable } from "../lib/local/wake-table.ts";
import { createTestRuntime } from "../lib/testing/runtime.ts";
import { type JournalStore, systemClock } from "../lib/ports.ts";
import { timed } from "./stats.ts";
import { sampleRecordJson } from "./sample-record.ts";
import { STEPS, benchWorkflows, sequential, sequentialThenSleep } from "./workflows.ts";

let nextId = 0;
/** A fresh run id per repetition, so every run starts from an empty journal. */
const runId = (prefix: string) => `${prefix}-${++nextId}`;

function expectStatus(result: { status: string }, status: InvocationResult["status"], what: string): void {
  if (result.status !== status) throw new Error(`${what}: expected ${status}, got ${JSON.stringify(result)}`);
}

/** An `Engine` over the SQLite store and wake table on one file, as the local runtime builds it. */
export function sqliteEngine(file: string) {
  const db = openLocalDatabase(file);
  const store = new SqliteJournalStore(db);
  const wakes = new SqliteWakeTable(db);
  const workflows = createRegistry(benchWorkflows);
  const ports = { store, wakes, clock: systemClock, workflows };
  const client = new Client(ports);
  const engine = new Engine({ ...ports, owner: "bench", leaseTtlMs: 10_000 });
  return { db, store, client, engine, close: () => db.close() };
}

export type SqliteEngine = ReturnType<typeof sqliteEngine>;

/** 1. Start + one invocation that runs all steps, straight through `Engine.invoke`. */
export async function sqliteEngineRun(h: SqliteEngine): Promise<number> {
  const id = runId("engine");
  return timed(async () => {
    await h.client.start(sequential, { runId: id, input: {} });
    expectStatus(await h.engine.invoke(id), "completed", "sqlite engine run");
  });
}

/** 1'. The same through `createLocalRuntime`: client.start, the runtime's loop, waitForRun. */
export async function localRuntimeRuns(dir: string, reps: { runs: number; warmup: number }): Promise<number[]> {
  const rt = createLocalRuntime({ workflows: benchWorkflows, file: join(dir, "runtime.db") });
  rt.start();
  try {
    const values: number[] = [];
    for (let i = 0; i < reps.warmup + reps.runs; i++) {
      const id = runId("runtime");
      const ms = await timed(async () => {
        await rt.client.start(sequential, { runId: id, input: {} });
        const run = await rt.waitForRun(id);
        if (run.status !== "completed") throw new Error(`local runtime run ended ${run.status}`);
      });
      if (i >= reps.warmup) values.push(ms);
    }
    return values;
  } finally {
    await rt.close();
  }
}

/** 2. The test runtime (virtual clock, memory store): `rt.start` runs the whole workflow. */
export async function testRuntimeRun(): Promise<number> {
  const rt = createTestRuntime({ workflows: benchWorkflows });
  const id = runId("memory");
  const ms = await timed(() => rt.start(sequential, { runId: id, input: {} }));
  expectStatus(rt.invocations.at(-1)?.result ?? { status: "none" }, "completed", "test runtime run");
  return ms;
}

/** A run of `sequentialThenSleep` whose steps are all recorded and which sleeps now. */
export async function prepareReplay(store: JournalStore, client: Client, engine: Engine): Promise<string> {
  const id = runId("replay");
  await client.start(sequentialThenSleep, { runId: id, input: {} });
  expectStatus(await engine.invoke(id), "suspended", "first invocation");
  const journal = await store.loadJournal(id);
  if (journal?.records.length !== STEPS + 1) throw new Error(`expected ${STEPS + 1} records, got ${journal?.records.length}`);
  return id;
}

/** 3. One invocation that loads the journal, replays every step and suspends again at the sleep. */
export async function replayInvocation(engine: Engine, id: string): Promise<number> {
  let result: InvocationResult | undefined;
  const ms = await timed(async () => {
    result = await engine.invoke(id);
  });
  expectStatus(result ?? { status: "none" }, "suspended", "replay");
  return ms;
}

/**
 * 3, cold: the same invocation as the first thing a fresh process does (`cold-replay.ts`), as
 * after a restart or on a Lambda cold start, before V8 and zod have warmed up.
 */
export function coldReplayInvocation(file: string, id: string): Promise<number> {
  const script = fileURLToPath(new URL("./cold-replay.ts", import.meta.url));
  const out = execFileSync(process.execPath, [...process.execArgv, script, file, id], { encoding: "utf8" });
  const ms = Number(out.trim());
  if (!Number.isFinite(ms)) throw new Error(`cold-replay.ts printed ${JSON.stringify(out)}`);
  return Promise.resolve(ms);
}

/** 3, split: reading the journal from the store. */
export async function loadOnly(store: JournalStore, id: string): Promise<number> {
  return timed(() => store.loadJournal(id));
}

/** 3, split: parsing and indexing the loaded records (zod, one schema per record). */
export async function parseOnly(store: JournalStore, id: string): Promise<number> {
  const journal = await store.loadJournal(id);
  if (!journal) throw new Error(`run ${id} is missing`);
  return timed(() => JournalView.parse(id, journal.records));
}

/** 4. The floor: the store's own INSERT statement, one autocommit per row, same file settings. */
export function rawInserts(file: string) {
  const db = openLocalDatabase(file);
  const insert = db.prepare<[string, string, string, null]>("INSERT INTO records (run_id, key, body, late_for) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING");
  const bodies = Array.from({ length: STEPS }, (_, i) => sampleRecordJson(i));
  const keys = Array.from({ length: STEPS }, (_, i) => `step#${i === 0 ? "s" : `s#${i + 1}`}`);
  const measure = async (): Promise<number> => {
    const id = runId("raw");
    return timed(() => {
      for (let i = 0; i < STEPS; i++) insert.run(id, keys[i]!, bodies[i]!, null);
    });
  };
  return { measure, close: () => db.close() };
}
