/**
 * One workload of bench/perf.ts, repeated, for a CPU profile (bench/profile-summary.ts reads it):
 *
 *   node --cpu-prof --cpu-prof-dir=/tmp/prof --conditions=waymark-source --import tsx bench/profile-workloads.ts seq 40
 *   node --import tsx bench/profile-summary.ts /tmp/prof/<file>.cpuprofile
 *
 * Workloads: `seq` (1,000 sequential steps, NORMAL), `resuspend` (replay 1,000 + re-suspend),
 * `resume` (signal + replay 1,000 + complete), `runs` (200 runs × 5 steps on the local runtime),
 * `map` (50-item step.map, NORMAL).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { Client } from "../lib/client.ts";
import { durable } from "../lib/index.ts";
import { Engine } from "../lib/core/engine.ts";
import { createRegistry } from "../lib/core/registry.ts";
import { openLocalDatabase } from "../lib/local/database.ts";
import { SqliteJournalStore } from "../lib/local/sqlite-store.ts";
import { SqliteWakeTable } from "../lib/local/wake-table.ts";
import { createLocalRuntime } from "../lib/local/runtime.ts";
import { systemClock } from "../lib/ports.ts";

const [what = "seq", times = "20"] = process.argv.slice(2);
const N = Number(times);
const Input = z.object({ n: z.number() });
const steps = durable({ name: "p-steps", input: Input }, async ({ n }, step) => {
  for (let i = 0; i < n; i++) await step.run("s", () => i);
});
const sleeper = durable({ name: "p-sleep", input: Input }, async ({ n }, step) => {
  for (let i = 0; i < n; i++) await step.run("s", () => i);
  await step.sleep("nap", "1h");
});
const waiter = durable({ name: "p-wait", input: Input, signals: { go: z.object({}) } }, async ({ n }, step) => {
  for (let i = 0; i < n; i++) await step.run("s", () => i);
  return (await step.waitForSignal("go", { timeout: "1h" })).received;
});
const mapFlow = durable({ name: "p-map", input: Input }, async ({ n }, step) => (await step.map("item", Array.from({ length: n }, (_, i) => i), async (i) => i * 2)).length);
const workflows = [steps, sleeper, waiter, mapFlow];

const dir = mkdtempSync(join(tmpdir(), "waymark-prof-"));
let seq = 0;
try {
  if (what === "runs") {
    const rt = createLocalRuntime({ workflows, file: join(dir, "runs.db"), concurrency: 16, tracing: false });
    await rt.start();
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    for (let k = 0; k < N; k++) {
      const ids = Array.from({ length: 200 }, () => `r-${++seq}`);
      for (const r of ids) await rt.client.start(steps, { runId: r, input: { n: 5 } });
      for (const r of ids) await rt.waitForRun(r);
    }
    const c = process.cpuUsage(c0);
    console.log(`${((N * 200) / ((performance.now() - t0) / 1000)).toFixed(0)} runs/s; ${((c.user + c.system) / 1000 / (N * 200)).toFixed(3)} ms CPU per run`);
    await rt.close();
  } else {
    const db = openLocalDatabase(join(dir, "p.db"));
    const ports = { store: new SqliteJournalStore(db), wakes: new SqliteWakeTable(db), clock: systemClock, workflows: createRegistry(workflows) };
    const client = new Client(ports);
    const engine = new Engine({ ...ports, owner: "prof", leaseTtlMs: 60_000 });
    const sleeping = `z-${++seq}`;
    if (what === "resuspend") {
      await client.start(sleeper, { runId: sleeping, input: { n: 1000 } });
      await engine.invoke(sleeping);
    }
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    const each: number[] = [];
    for (let k = 0; k < N; k++) {
      const t1 = performance.now();
      const run = `p-${++seq}`;
      if (what === "seq") {
        await client.start(steps, { runId: run, input: { n: 1000 } });
        await engine.invoke(run);
      } else if (what === "resuspend") {
        await engine.invoke(sleeping);
      } else if (what === "resume") {
        await client.start(waiter, { runId: run, input: { n: 1000 } });
        await engine.invoke(run);
        await client.signal(run, "go", {});
        await engine.invoke(run);
      } else if (what === "map") {
        await client.start(mapFlow, { runId: run, input: { n: 50 } });
        await engine.invoke(run);
      } else throw new Error(`unknown workload ${what}`);
      each.push(performance.now() - t1);
    }
    each.sort((a, b) => a - b);
    const c = process.cpuUsage(c0);
    console.log(`${what}: ${((performance.now() - t0) / N).toFixed(2)} ms each; ${((c.user + c.system) / 1000 / N).toFixed(2)} ms CPU each; min ${each[0]!.toFixed(2)}, p25 ${each[Math.floor(N / 4)]!.toFixed(2)} ms`);
    db.close();
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
