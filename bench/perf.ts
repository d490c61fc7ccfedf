/**
 * Issue 19's table, measured in interleaved rounds on one machine: every round runs each
 * workload once, in the same order, so a noisy neighbour slows every workload of that round
 * alike; the figures are medians over rounds, and each ratio is taken within its round (e.g. a
 * step ÷ the raw INSERT of that round) before its median. The raw floors are the store's own
 * INSERT statement, one autocommit per row, into the engine's own journal file (NORMAL or FULL),
 * its WAL checkpointed as the engine's is (on a worker thread); one more floor, in a file of its
 * own with SQLite's default inline checkpoint, is what a plain SQLite program pays.
 *
 * Every figure here is Waymark's own, against the raw SQLite floor of the same round; the peers
 * the issue compares against (the AWS durable runner, Restate, DBOS) are in bench/peers/run.ts.
 *
 * What runs is the package as users install it: `npm run build` first, then
 * `node --import tsx bench/perf.ts [rounds]` measures dist/ (tsc's output). With
 * `--conditions=waymark-source` it measures lib/ through tsx instead, whose transform names every
 * closure it makes (esbuild's keepNames): a per-step cost users never pay.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
// The package by its own name: its build (dist/, what users install) unless the sources are asked
// for with --conditions=waymark-source (then through tsx, which adds work of its own per closure).
import { Client, createRegistry, durable, Engine, systemClock } from "waymark";
import { createLocalRuntime, type Durability, openLocalDatabase, SqliteJournalStore, SqliteWakeTable } from "waymark/local";
import { MemoryJournalStore, MemoryWakeQueue } from "waymark/testing";
import type { AppendResult } from "../lib/ports.ts";
import { checkpointInBackground, commitCounter } from "../lib/local/checkpointer.ts";
import { fmt, summarise, table, timed } from "./stats.ts";
import { sampleRecordJson } from "./sample-record.ts";

const ROUNDS = Number(process.argv[2] ?? 9);
const STEPS = 1_000;
const Input = z.object({ n: z.number() });

const steps = durable({ name: "perf-steps", input: Input }, async ({ n }, step) => {
  let last = 0;
  for (let i = 0; i < n; i++) last = await step.run("s", () => i);
  return last;
});
const stepsThenWait = durable({ name: "perf-wait", input: Input, signals: { go: z.object({}) } }, async ({ n }, step) => {
  for (let i = 0; i < n; i++) await step.run("s", () => i);
  const got = await step.waitForSignal("go", { timeout: "1h" });
  return got.received;
});
const stepsThenSleep = durable({ name: "perf-sleep", input: Input }, async ({ n }, step) => {
  for (let i = 0; i < n; i++) await step.run("s", () => i);
  await step.sleep("nap", "1h");
});
const mapFlow = durable({ name: "perf-map", input: Input }, async ({ n }, step) => {
  const out = await step.map("item", Array.from({ length: n }, (_, i) => i), async (i) => i * 2);
  return out.length;
});
const fiveSteps = durable({ name: "perf-five", input: Input }, async ({ n }, step) => {
  for (let i = 0; i < n; i++) await step.run("s", () => i);
});
const workflows = [steps, stepsThenWait, stepsThenSleep, mapFlow, fiveSteps];

/** Which code the package name resolved to: the build or the sources. */
function measured(): string {
  const entry = createRequire(import.meta.url).resolve("waymark");
  return entry.endsWith(".ts") ? "lib/ (sources, through tsx)" : "dist/ (the build users install)";
}

let seq = 0;
const id = (p: string) => `${p}-${++seq}`;

function harness(file: string, durability: Durability, checkpoints: "background" | "inline" = "background") {
  const db = openLocalDatabase(file, { durability, checkpoints });
  const store = new SqliteJournalStore(db);
  const ports = { store, wakes: new SqliteWakeTable(db), clock: systemClock, workflows: createRegistry(workflows) };
  const client = new Client(ports);
  const engine = new Engine({ ...ports, owner: "perf", leaseTtlMs: 60_000 });
  return { db, file, store, client, engine };
}
type Harness = ReturnType<typeof harness>;

/**
 * The engine's own time per step: a journal whose appends are answered at once (written, no
 * cancellation), so what is timed is the engine and the step API, not a store.
 */
class AnsweringStore extends MemoryJournalStore {
  override appendRecord(): Promise<AppendResult> {
    return Promise.resolve({ written: true, probed: null });
  }
}

function answering() {
  const ports = { store: new AnsweringStore(), wakes: new MemoryWakeQueue(), clock: systemClock, workflows: createRegistry(workflows) };
  return { client: new Client(ports), engine: new Engine({ ...ports, owner: "perf-engine", leaseTtlMs: 60_000 }) };
}

function expect(status: string, want: string, what: string): void {
  if (status !== want) throw new Error(`${what}: ${status}, expected ${want}`);
}

/**
 * The floor: the store's own INSERT of the same records, one autocommit per row, into the same
 * journal file and table the engine writes (its own run ids), so both meet the same b-tree, the
 * same page cache and the same WAL. A file of its own would be smaller, as the engine's file also
 * holds the other workloads' runs, and each INSERT into it cheaper. Its checkpoints are made as
 * the engine's are (lib/local/checkpointer.ts: a worker thread, asked every 256 commits), unless
 * `inline`: then the file is one of its own, opened with SQLite's own automatic checkpoint, the
 * floor a plain SQLite program pays.
 */
function rawInsert(db: Harness["db"], file: string, inline = false): () => number {
  const insert = db.prepare<[string, string, string, null]>("INSERT INTO records (run_id, key, body, late_for) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING");
  const bodies = Array.from({ length: STEPS }, (_, i) => sampleRecordJson(i));
  const keys = Array.from({ length: STEPS }, (_, i) => `step#${i === 0 ? "s" : `s#${i + 1}`}`);
  // This file's checkpointer module is not the build's (dist/): it registers the connection again.
  const committed = inline ? undefined : (checkpointInBackground(db, file), commitCounter(db));
  if (!inline && !committed) throw new Error("the checkpoint worker did not start");
  return () => {
    const run = id("raw");
    const t0 = performance.now();
    for (let i = 0; i < STEPS; i++) {
      insert.run(run, keys[i]!, bodies[i]!, null);
      committed?.();
    }
    return performance.now() - t0;
  };
}

async function sequential(h: Pick<Harness, "client" | "engine">, n = STEPS): Promise<number> {
  const run = id("seq");
  return timed(async () => {
    await h.client.start(steps, { runId: run, input: { n } });
    expect((await h.engine.invoke(run)).status, "completed", "sequential");
  });
}

async function suspendedRun(h: Harness, n: number): Promise<string> {
  const run = id("sleep");
  await h.client.start(stepsThenSleep, { runId: run, input: { n } });
  expect((await h.engine.invoke(run)).status, "suspended", "prepare sleep");
  return run;
}

/** Resume + replay: a signal to a run waiting after 1,000 steps, and the invocation that completes it. */
async function resume(h: Harness): Promise<number> {
  const run = id("wait");
  await h.client.start(stepsThenWait, { runId: run, input: { n: STEPS } });
  expect((await h.engine.invoke(run)).status, "suspended", "prepare wait");
  return timed(async () => {
    await h.client.signal(run, "go", {});
    expect((await h.engine.invoke(run)).status, "completed", "resume");
  });
}

async function map50(h: Harness): Promise<number> {
  const run = id("map");
  await h.client.start(mapFlow, { runId: run, input: { n: 50 } });
  return timed(async () => expect((await h.engine.invoke(run)).status, "completed", "map"));
}

/** The CPU time (user + system, this process) of the last manyRuns, per run: on a loaded machine it moves far less than runs/s. */
let manyRunsCpuMs = 0;

async function manyRuns(dir: string, runs: number): Promise<number> {
  const rt = createLocalRuntime({ workflows, file: join(dir, `many-${++seq}.db`), concurrency: 16, tracing: false });
  await rt.start();
  try {
    const ids = Array.from({ length: runs }, () => id("five"));
    const cpu = process.cpuUsage();
    const ms = await timed(async () => {
      for (const r of ids) await rt.client.start(fiveSteps, { runId: r, input: { n: 5 } });
      for (const r of ids) expect((await rt.waitForRun(r)).status, "completed", "five");
    });
    const used = process.cpuUsage(cpu);
    manyRunsCpuMs = (used.user + used.system) / 1000 / runs;
    return runs / (ms / 1000);
  } finally {
    await rt.close();
  }
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "waymark-perf-"));
  try {
    const normal = harness(join(dir, "normal.db"), "normal");
    const full = harness(join(dir, "full.db"), "full");
    const plain = harness(join(dir, "inline.db"), "normal", "inline");
    const rawNormal = rawInsert(normal.db, normal.file);
    const rawInline = rawInsert(plain.db, plain.file, true);
    const rawFull = rawInsert(full.db, full.file);
    const engineOnly = answering();
    const sleeping = await suspendedRun(normal, STEPS);
    const sleeping10k = await suspendedRun(normal, 10 * STEPS);
    const cols: Record<string, number[]> = {};
    const put = (k: string, v: number) => (cols[k] ??= []).push(v);
    console.log(`perf: ${ROUNDS} interleaved rounds of ${measured()}; node ${process.version}, ${cpus()[0]?.model ?? "?"} x${cpus().length}; load average ${loadavg().map((l) => l.toFixed(2)).join(" ")}`);
    for (let round = -1; round < ROUNDS; round++) {
      const r: Record<string, number> = {};
      r.engineStep = ((await sequential(engineOnly)) * 1000) / STEPS;
      r.rawNormal = rawNormal();
      r.rawInline = rawInline();
      r.seqNormal = await sequential(normal);
      r.rawFull = rawFull();
      r.seqFull = await sequential(full);
      r.resuspend = await timed(async () => expect((await normal.engine.invoke(sleeping)).status, "suspended", "re-suspend"));
      r.resuspend10k = await timed(async () => expect((await normal.engine.invoke(sleeping10k)).status, "suspended", "re-suspend 10k"));
      r.resume = await resume(normal);
      r.mapNormal = await map50(normal);
      r.mapFull = await map50(full);
      if (round % 3 === 0 || round === -1) {
        r.runsPerS = await manyRuns(dir, 200);
        r.runCpuMs = manyRunsCpuMs;
      }
      if (round < 0) continue; // warm-up
      for (const [k, v] of Object.entries(r)) put(k, v);
      put("seqRatio", r.seqNormal! / r.rawNormal!);
      put("inlineRatio", r.seqNormal! / r.rawInline!);
      put("fullRatio", r.seqFull! / r.rawFull!);
      put("mapRatio", r.mapFull! / r.mapNormal!);
      put("tenK", r.resuspend10k! / (10 * r.resuspend!));
      process.stdout.write(".");
    }
    console.log(`\nload average at the end ${loadavg().map((l) => l.toFixed(2)).join(" ")}\n`);
    const m = (k: string) => summarise(cols[k] ?? [0]);
    const rows = [
      ["the engine's own time per step, a store answering at once (µs)", m("engineStep")],
      ["1,000 raw INSERTs, NORMAL, checkpoints as the engine's (ms)", m("rawNormal")],
      ["1,000 raw INSERTs, NORMAL, SQLite's inline checkpoint (ms)", m("rawInline")],
      ["1,000 sequential steps, NORMAL (ms)", m("seqNormal")],
      ["  ÷ raw INSERT, per round (×)", m("seqRatio")],
      ["  ÷ raw INSERT with SQLite's inline checkpoint (×)", m("inlineRatio")],
      ["1,000 raw INSERTs, FULL (ms)", m("rawFull")],
      ["1,000 sequential steps, FULL (ms)", m("seqFull")],
      ["  ÷ raw FULL INSERT, per round (×)", m("fullRatio")],
      ["resume (signal) + replay 1,000 + complete (ms)", m("resume")],
      ["replay 1,000 + re-suspend, engine.invoke (ms)", m("resuspend")],
      ["replay 10,000 + re-suspend (ms)", m("resuspend10k")],
      ["  ÷ (10 × the 1,000 replay), per round (×)", m("tenK")],
      ["step.map 50 items, NORMAL (ms)", m("mapNormal")],
      ["step.map 50 items, FULL (ms)", m("mapFull")],
      ["  FULL ÷ NORMAL, per round (×)", m("mapRatio")],
      ["200 runs × 5 steps, local runtime (runs/s)", m("runsPerS")],
      ["  CPU per run (ms)", m("runCpuMs")],
    ] as const;
    console.log(table(["workload", "median", "min", "max"], rows.map(([l, s]) => [l, fmt(s.median), fmt(s.min), fmt(s.max)])));
    normal.db.close();
    full.db.close();
    plain.db.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
