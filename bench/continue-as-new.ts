/**
 * Continue-as-new vs one ever-growing journal (issue 10): a 10,000-step run on a SQLite file,
 * once as one incarnation and once as ten of 1,000 steps (`step.continueAsNew` every 1,000).
 * Each ends suspended at a sleep; the figure is what every later invocation of it pays: load the
 * journal, parse it, replay it, suspend. Memory: the heap a loaded, parsed journal holds.
 * Printed, never asserted. Run by `npm run bench`.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { z } from "zod";
import { Client, createRegistry, durable, Engine } from "../lib/index.ts";
import { JournalView } from "../lib/core/journal-view.ts";
import { openLocalDatabase } from "../lib/local/database.ts";
import { SqliteJournalStore } from "../lib/local/sqlite-store.ts";
import { SqliteWakeTable } from "../lib/local/wake-table.ts";
import { systemClock } from "../lib/ports.ts";
import { fmt, repeat, timed } from "./stats.ts";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

const TOTAL = 10_000;
const BATCH = 1_000;

const oneJournal = durable({ name: "one-journal", input: z.object({}) }, async (_in, step) => {
  for (let i = 0; i < TOTAL; i++) await step.run("s", () => i);
  await step.sleep("rest", "1h");
});
const batches = durable({ name: "batches", input: z.object({ batch: z.number() }) }, async ({ batch }, step) => {
  for (let i = 0; i < BATCH; i++) await step.run("s", () => batch * BATCH + i);
  if ((batch + 1) * BATCH < TOTAL) return step.continueAsNew({ batch: batch + 1 });
  await step.sleep("rest", "1h");
});

/** Heap a loaded, parsed journal holds: ten copies kept alive at once, divided by ten. */
async function heldHeap(store: SqliteJournalStore, runId: string): Promise<number> {
  const kept: unknown[] = [];
  gc();
  const before = process.memoryUsage().heapUsed;
  for (let i = 0; i < 10; i++) {
    const journal = await store.loadJournal(runId);
    if (journal) kept.push(journal, JournalView.parse(runId, journal.records));
  }
  gc();
  const held = process.memoryUsage().heapUsed - before;
  if (kept.length !== 20) throw new Error("journal missing");
  return held / 10 / 1024 / 1024;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "waymark-bench-can-"));
  const db = openLocalDatabase(join(dir, "journal.db"));
  try {
    const store = new SqliteJournalStore(db);
    const ports = { store, wakes: new SqliteWakeTable(db), clock: systemClock, workflows: createRegistry([oneJournal, batches]) };
    const client = new Client(ports);
    const engine = new Engine({ ...ports, owner: "bench", maxInvocations: 1_000_000 });
    await client.start(oneJournal, { runId: "one", input: {} });
    await client.start(batches, { runId: "batched", input: { batch: 0 } });
    const t1 = await timed(async () => engine.invoke("one"));
    let invocations = 0;
    const t2 = await timed(async () => {
      for (let r = await engine.invoke("batched"); r.status === "continued"; r = await engine.invoke("batched")) invocations++;
    });
    console.log(`\nContinue-as-new: ${TOTAL.toLocaleString("en")} steps as one journal vs ${TOTAL / BATCH} incarnations of ${BATCH.toLocaleString("en")} (SQLite file)`);
    console.log(`  first pass: one journal ${fmt(t1)} ms in 1 invocation; batches ${fmt(t2)} ms in ${invocations + 1} invocations`);

    const results: Array<{ label: string; records: number; median: number; min: number; heapMiB: number }> = [];
    for (const runId of ["one", "batched"]) {
      const records = (await store.loadJournal(runId))?.records.length ?? 0;
      const s = await repeat(() => timed(() => engine.invoke(runId)), { runs: 9, warmup: 2 });
      results.push({ label: runId === "one" ? "one incarnation" : `incarnation ${(await store.getRun(runId))?.incarnation}`, records, median: s.median, min: s.min, heapMiB: await heldHeap(store, runId) });
    }
    console.log(`  ${"journal".padEnd(18)}${"records".padStart(9)}${"invocation median ms".padStart(22)}${"min".padStart(8)}${"heap held, MiB".padStart(16)}`);
    for (const r of results) console.log(`  ${r.label.padEnd(18)}${r.records.toLocaleString("en").padStart(9)}${fmt(r.median).padStart(22)}${fmt(r.min).padStart(8)}${r.heapMiB.toFixed(2).padStart(16)}`);
    const [one, batched] = results;
    if (one && batched) console.log(`  per later invocation, one journal / batches: ${(one.median / batched.median).toFixed(1)}x the time, ${(one.heapMiB / batched.heapMiB).toFixed(1)}x the heap`);
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
