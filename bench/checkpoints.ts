/**
 * Where the WAL checkpoint runs (lib/local/checkpointer.ts): inline, SQLite's own automatic
 * checkpoint inside the commit that crosses 1,000 WAL pages, or on the worker thread, asked for
 * every 256 commits. Interleaved rounds, each ratio taken within its round:
 *
 * - 1,000 raw INSERTs, one autocommit each, into a file of each kind;
 * - 1,000 sequential steps (`Engine.invoke`, one record per commit) on a file of each kind;
 * - a checkpoint's own time, run by hand on a WAL of 1,000 single-record commits.
 *
 * Run: node --conditions=waymark-source --import tsx bench/checkpoints.ts [rounds=9]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { Client } from "../lib/client.ts";
import { Engine } from "../lib/core/engine.ts";
import { createRegistry } from "../lib/core/registry.ts";
import { durable } from "../lib/index.ts";
import { commitCounter } from "../lib/local/checkpointer.ts";
import { type Database, openLocalDatabase } from "../lib/local/database.ts";
import { SqliteJournalStore } from "../lib/local/sqlite-store.ts";
import { SqliteWakeTable } from "../lib/local/wake-table.ts";
import { systemClock } from "../lib/ports.ts";
import { sampleRecordJson } from "./sample-record.ts";
import { fmt, summarise, table, timed } from "./stats.ts";

const ROUNDS = Number(process.argv[2] ?? 9);
const STEPS = 1_000;
const steps = durable({ name: "ckpt-steps", input: z.object({ n: z.number() }) }, async ({ n }, step) => {
  for (let i = 0; i < n; i++) await step.run("s", () => i);
});
const dir = mkdtempSync(join(tmpdir(), "waymark-checkpoints-"));
let seq = 0;

function side(mode: "background" | "inline") {
  const db = openLocalDatabase(join(dir, `${mode}.db`), { checkpoints: mode });
  const ports = { store: new SqliteJournalStore(db), wakes: new SqliteWakeTable(db), clock: systemClock, workflows: createRegistry([steps]) };
  const client = new Client(ports);
  const engine = new Engine({ ...ports, owner: "ckpt", leaseTtlMs: 60_000 });
  const insert = db.prepare<[string, string, string, null]>("INSERT INTO records (run_id, key, body, late_for) VALUES (?, ?, ?, ?)");
  const committed = commitCounter(db);
  if ((mode === "background") !== (committed !== undefined)) throw new Error(`${mode}: the worker did not take the file`);
  const bodies = Array.from({ length: STEPS }, (_, i) => sampleRecordJson(i));
  const keys = Array.from({ length: STEPS }, (_, i) => `step#${i === 0 ? "s" : `s#${i + 1}`}`);
  return {
    db,
    raw: () => {
      const run = `raw-${++seq}`;
      const t0 = performance.now();
      for (let i = 0; i < STEPS; i++) {
        insert.run(run, keys[i]!, bodies[i]!, null);
        committed?.();
      }
      return performance.now() - t0;
    },
    steps: () =>
      timed(async () => {
        const runId = `seq-${++seq}`;
        await client.start(steps, { runId, input: { n: STEPS } });
        const { status } = await engine.invoke(runId);
        if (status !== "completed") throw new Error(status);
      }),
  };
}

/** A PASSIVE checkpoint's time on a WAL that 1,000 single-record commits wrote (no checkpoint in between). */
function checkpointOnce(db: Database): { ms: number; pages: number } {
  db.pragma("wal_checkpoint(TRUNCATE)");
  db.pragma("wal_autocheckpoint = 0");
  const insert = db.prepare<[string, string, string]>("INSERT INTO records (run_id, key, body) VALUES (?, ?, ?)");
  const run = `ck-${++seq}`;
  for (let i = 0; i < STEPS; i++) insert.run(run, `step#s${i}`, sampleRecordJson(i));
  const t0 = performance.now();
  const row = (db.pragma("wal_checkpoint(PASSIVE)") as Array<{ log: number }>)[0];
  const ms = performance.now() - t0;
  db.pragma("wal_autocheckpoint = 1000");
  return { ms, pages: row?.log ?? 0 };
}

try {
  const inline = side("inline");
  const background = side("background");
  const cols: Record<string, number[]> = {};
  const put = (k: string, v: number) => (cols[k] ??= []).push(v);
  console.log(`checkpoints: ${ROUNDS} interleaved rounds; node ${process.version}, ${cpus()[0]?.model ?? "?"} x${cpus().length}; load average ${loadavg().map((l) => l.toFixed(2)).join(" ")}`);
  for (let round = -1; round < ROUNDS; round++) {
    const r = { rawInline: inline.raw(), rawBackground: background.raw(), stepsInline: await inline.steps(), stepsBackground: await background.steps() };
    const probe = checkpointOnce(inline.db);
    if (round < 0) continue;
    for (const [k, v] of Object.entries(r)) put(k, v);
    put("rawRatio", r.rawBackground / r.rawInline);
    put("stepsRatio", r.stepsBackground / r.stepsInline);
    put("checkpointMs", probe.ms);
    put("checkpointPages", probe.pages);
    process.stdout.write(".");
  }
  console.log(`\nload average at the end ${loadavg().map((l) => l.toFixed(2)).join(" ")}\n`);
  const m = (k: string) => summarise(cols[k] ?? [0]);
  const rows = [
    ["1,000 raw INSERTs, checkpoints inline (ms)", m("rawInline")],
    ["1,000 raw INSERTs, checkpoints on the worker (ms)", m("rawBackground")],
    ["  worker ÷ inline, per round (×)", m("rawRatio")],
    ["1,000 sequential steps, checkpoints inline (ms)", m("stepsInline")],
    ["1,000 sequential steps, checkpoints on the worker (ms)", m("stepsBackground")],
    ["  worker ÷ inline, per round (×)", m("stepsRatio")],
    ["one checkpoint of 1,000 single-record commits (ms)", m("checkpointMs")],
    ["  WAL pages it copied", m("checkpointPages")],
  ] as const;
  console.log(table(["workload", "median", "min", "max"], rows.map(([l, s]) => [l, fmt(s.median), fmt(s.min), fmt(s.max)])));
  inline.db.close();
  background.db.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
