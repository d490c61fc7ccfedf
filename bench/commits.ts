/**
 * What the local runtime writes for 200 runs × 5 steps (bench/perf.ts's runs/s workload): WAL
 * frames per run, i.e. pages written by its commits (checkpoints off), and the CPU time per run.
 * Frames do not depend on the machine's load; on a VM where a commit costs ~30 µs per frame,
 * they are most of a run's cost.
 *
 * Run: node --conditions=waymark-source --import tsx bench/commits.ts [rounds=3]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { durable } from "../lib/index.ts";
import type { Database } from "../lib/local/database.ts";
import { createLocalRuntime } from "../lib/local/runtime.ts";
import { summarise } from "./stats.ts";

const ROUNDS = Number(process.argv[2] ?? 3);
const fiveSteps = durable({ name: "commits-five", input: z.object({ n: z.number() }) }, async ({ n }, step) => {
  for (let i = 0; i < n; i++) await step.run("s", () => i);
});
const dir = mkdtempSync(join(tmpdir(), "waymark-commits-"));
try {
  const rt = createLocalRuntime({ workflows: [fiveSteps], file: join(dir, "c.db"), concurrency: 16, tracing: false, checkpoints: "inline" });
  await rt.start();
  // The runtime's own connection (not public): the WAL's frame count is per connection's view.
  const db = (rt as unknown as { db: Database }).db;
  db.pragma("wal_autocheckpoint = 0");
  const frames: number[] = [];
  const cpu: number[] = [];
  let seq = 0;
  for (let round = 0; round <= ROUNDS; round++) {
    db.pragma("wal_checkpoint(TRUNCATE)");
    const ids = Array.from({ length: 200 }, () => `c-${++seq}`);
    const c0 = process.cpuUsage();
    for (const r of ids) await rt.client.start(fiveSteps, { runId: r, input: { n: 5 } });
    for (const r of ids) await rt.waitForRun(r);
    const c = process.cpuUsage(c0);
    const log = (db.pragma("wal_checkpoint(PASSIVE)") as Array<{ log: number }>)[0]?.log ?? 0;
    if (round === 0) continue; // warm-up
    frames.push(log / ids.length);
    cpu.push((c.user + c.system) / 1000 / ids.length);
  }
  await rt.close();
  console.log(`200 runs × 5 steps, local runtime (${ROUNDS} rounds, medians): ${summarise(frames).median.toFixed(1)} WAL frames per run, ${summarise(cpu).median.toFixed(3)} ms CPU per run`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
