/**
 * What the local runtime asks SQLite for in 200 runs × 5 steps (bench/perf.ts's runs/s
 * workload): every statement executed, by its SQL, per run. Counts do not depend on the
 * machine's load; bench/commits.ts gives the WAL frames (pages written) of the same workload.
 * The harness's own reads are in the counts: `waitForRun` polls `SELECT * FROM runs` (about
 * two of the three per run).
 *
 * Run: node --conditions=waymark-source --import tsx bench/statements.ts
 */
import Database from "better-sqlite3";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { durable } from "../lib/index.ts";
import { createLocalRuntime } from "../lib/local/runtime.ts";
const counts = new Map<string, number>();
const proto = (Database as unknown as { prototype: { prepare: (sql: string) => unknown } }).prototype;
const origPrepare = proto.prepare;
let counting = false;
proto.prepare = function (this: unknown, sql: string) {
  const st = origPrepare.call(this, sql) as Record<string, (...a: unknown[]) => unknown>;
  for (const m of ["run", "all", "get", "iterate"]) {
    const f = st[m]!;
    st[m] = function (this: unknown, ...a: unknown[]) {
      if (counting) { const k = sql.replace(/\s+/g, " ").trim().slice(0, 90); counts.set(k, (counts.get(k) ?? 0) + 1); }
      return f.apply(this, a);
    };
  }
  return st;
};
const five = durable({ name: "five", input: z.object({ n: z.number() }) }, async ({ n }, step) => { for (let i = 0; i < n; i++) await step.run("s", () => i); });
const dir = mkdtempSync(join(tmpdir(), "waymark-statements-"));
const rt = createLocalRuntime({ workflows: [five], file: join(dir, "s.db"), concurrency: 16, tracing: false });
await rt.start();
const N = 200;
counting = true;
const ids = Array.from({ length: N }, (_, i) => `r-${i}`);
for (const r of ids) await rt.client.start(five, { runId: r, input: { n: 5 } });
for (const r of ids) await rt.waitForRun(r);
counting = false;
await rt.close();
rmSync(dir, { recursive: true, force: true });
let total = 0;
for (const [k, v] of [...counts].sort((a, b) => b[1] - a[1])) { total += v; console.log((v / N).toFixed(2).padStart(6), k); }
console.log(`${(total / N).toFixed(2).padStart(6)} statements per run in all`);
