/**
 * `npm run bench`: prints how fast the engine runs and replays a 1,000-step workflow on the
 * SQLite local runtime and on the test runtime, beside the raw SQLite INSERT floor.
 * Figures only, never assertions: the machine that runs this is usually shared and noisy.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { createTestRuntime } from "../lib/testing/runtime.ts";
import {
  coldReplayInvocation,
  loadOnly,
  localRuntimeRuns,
  parseOnly,
  prepareReplay,
  rawInserts,
  replayInvocation,
  sqliteEngine,
  sqliteEngineRun,
  testRuntimeRun,
} from "./scenarios.ts";
import { type Sample, fmt, per, repeat, summarise, table } from "./stats.ts";
import { STEPS, benchWorkflows } from "./workflows.ts";
import { payloadBench, type PayloadBenchRow } from "./payloads.ts";

const REPS = { runs: 7, warmup: 3 };

// A collector to call around the memory figures, without a command-line flag.
setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

interface Row {
  label: string;
  unit: "ms/step" | "ms" | "ms/row";
  sample: Sample;
  /** Median of one whole repetition, for per-step rows. */
  total?: number;
  target?: number;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "waymark-bench-"));
  const rows: Row[] = [];
  const memory: string[][] = [];
  let payloadRows: PayloadBenchRow[] = [];
  try {
    const file = join(dir, "engine.db");
    const sqlite = sqliteEngine(file);
    const mode = `journal_mode=${String(sqlite.db.pragma("journal_mode", { simple: true }))}, synchronous=${String(sqlite.db.pragma("synchronous", { simple: true }))} (1 = NORMAL)`;
    console.log(`Waymark bench: ${STEPS.toLocaleString("en")} sequential steps (step.run("s", () => i)), median of ${REPS.runs} runs after ${REPS.warmup} warm-up`);
    console.log(`node ${process.version}, ${cpus()[0]?.model ?? "unknown CPU"} x${cpus().length}, ${process.platform}/${process.arch}`);
    console.log(`SQLite: a file in ${tmpdir()}, ${mode}: every step committed to the WAL, durable against process death`);
    console.log("Note: the machine is shared and noisy (other jobs run beside this); trust the min and the ratios more than one median.\n");

    // 1. SQLite: straight through Engine.invoke, then through the local runtime's loop.
    const engineRun = await repeat(() => sqliteEngineRun(sqlite), REPS);
    rows.push({ label: "1. SQLite, Engine.invoke direct (client.start + 1 invocation)", unit: "ms/step", sample: per(engineRun, STEPS), total: engineRun.median, target: 0.1 });
    memory.push(["SQLite, Engine.invoke", ...(await memoryAround(() => sqliteEngineRun(sqlite)))]);
    const runtime = summarise(await localRuntimeRuns(dir, REPS));
    rows.push({ label: "1. SQLite, createLocalRuntime (client.start + waitForRun)", unit: "ms/step", sample: per(runtime, STEPS), total: runtime.median, target: 0.1 });

    // 2. The test runtime.
    const testRun = await repeat(testRuntimeRun, REPS);
    rows.push({ label: "2. test runtime (virtual clock, memory store), rt.start", unit: "ms/step", sample: per(testRun, STEPS), total: testRun.median, target: 0.2 });
    memory.push(["test runtime", ...(await memoryAround(testRuntimeRun))]);

    // 3. One invocation of a run with 1,000 recorded steps: load, parse, replay, suspend again.
    const replayId = await prepareReplay(sqlite.store, sqlite.client, sqlite.engine);
    rows.push({ label: "3. replay 1,000 recorded steps, SQLite: whole invocation", unit: "ms", sample: await repeat(() => replayInvocation(sqlite.engine, replayId), REPS), target: 10 });
    rows.push({ label: "   of which loadJournal (SELECT + JSON.parse per row)", unit: "ms", sample: await repeat(() => loadOnly(sqlite.store, replayId), REPS) });
    rows.push({ label: "   of which JournalView.parse (zod per record)", unit: "ms", sample: await repeat(() => parseOnly(sqlite.store, replayId), REPS) });
    rows.push({ label: "3. the same, first invocation of a fresh process (cold)", unit: "ms", sample: await repeat(() => coldReplayInvocation(file, replayId), { runs: REPS.runs, warmup: 1 }), target: 10 });
    const mem = createTestRuntime({ workflows: benchWorkflows });
    const memoryId = await prepareReplay(mem.store, mem.client, mem.engine);
    rows.push({ label: "3. replay 1,000 recorded steps, memory: whole invocation", unit: "ms", sample: await repeat(() => replayInvocation(mem.engine, memoryId), REPS), target: 10 });
    rows.push({ label: "   of which loadJournal (structuredClone)", unit: "ms", sample: await repeat(() => loadOnly(mem.store, memoryId), REPS) });
    rows.push({ label: "   of which JournalView.parse (zod per record)", unit: "ms", sample: await repeat(() => parseOnly(mem.store, memoryId), REPS) });
    sqlite.close();

    // 4. The floor: what one autocommitted row costs in the same file configuration.
    const raw = rawInserts(join(dir, "raw.db"));
    const inserts = await repeat(raw.measure, REPS);
    raw.close();
    rows.push({ label: "4. raw better-sqlite3 INSERT, one autocommit per row", unit: "ms/row", sample: per(inserts, STEPS), total: inserts.median });

    // 5. A 1 MiB step result: inline vs by reference (S3 on the local peer, a directory).
    payloadRows = await payloadBench(dir, REPS);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }

  console.log(
    table(
      ["measurement", "unit", "median", "min", "max", "per run", "target", ""],
      rows.map((r) => [
        r.label,
        r.unit,
        fmt(r.sample.median),
        fmt(r.sample.min),
        fmt(r.sample.max),
        r.total === undefined ? "" : `${fmt(r.total)} ms`,
        r.target === undefined ? "" : `<= ${r.target}`,
        r.target === undefined ? "" : r.sample.median <= r.target ? "met" : "MISSED",
      ]),
    ),
  );
  const floor = rows.find((r) => r.unit === "ms/row")?.sample;
  if (floor) {
    console.log("\nPer step as a multiple of the raw INSERT floor (median / median, min / min):");
    for (const r of rows.filter((r) => r.unit === "ms/step")) {
      console.log(`  ${r.label.slice(3).padEnd(60)} ${(r.sample.median / floor.median).toFixed(1)}x  ${(r.sample.min / floor.min).toFixed(1)}x`);
    }
  }
  console.log("  (createLocalRuntime adds per run, not per step: the wake-table claim and ack, and the runtime's start and close; waitForRun answers as the run's invocation ends.)");
  console.log(`\nMemory around one ${STEPS.toLocaleString("en")}-step run (collected just before it):`);
  console.log(table(["run", "heapUsed delta", "retained after gc", "RSS after"], memory));
  console.log("\n5. A 1 MiB step result, SQLite journal: written (invocation 1: run the step, suspend) and replayed (invocation 2: read it back, complete), ms");
  console.log(table(["where the value goes", "write median", "write min", "replay median", "replay min"], payloadRows.map((r) => [r.label, fmt(r.write.median), fmt(r.write.min), fmt(r.replay.median), fmt(r.replay.min)])));
}

/** heapUsed growth across one run (garbage included), what survives a collection, and RSS. */
async function memoryAround(run: () => Promise<unknown>): Promise<string[]> {
  gc();
  const before = process.memoryUsage().heapUsed;
  await run();
  const after = process.memoryUsage();
  gc();
  const retained = process.memoryUsage().heapUsed - before;
  const mb = (n: number) => `${(n / 1024 / 1024).toFixed(1).replace(/^-0\.0$/, "0.0")} MB`;
  return [mb(after.heapUsed - before), mb(retained), mb(after.rss)];
}

await main();

// step.map and child runs fanned out: bench/compose.ts.
await import("./compose.ts");
// Continue-as-new vs one growing journal: bench/continue-as-new.ts.
await import("./continue-as-new.ts");
// waymark/ai: the durable wrapper's cost per model call and per tool call: bench/ai-agent.ts.
await (await import("./ai-agent.ts")).aiBench();
// The AWS runtime (DynamoDB Local and the SQS emulator, started by it): bench/aws.ts.
await import("./aws.ts");
// The example functions' Lambda bundles and cold starts: bench/cold-start.ts.
await import("./cold-start.ts");
