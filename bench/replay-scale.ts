/**
 * Replay cost against journal size (issue 19, item 5): one invocation that replays N recorded
 * steps and suspends again, for N = 1,000 and 10,000, interleaved, on a SQLite file. Prints the
 * medians, the ratio 10,000 ÷ (10 × 1,000) per round, and where the time goes for the large one
 * (the journal's load alone, and its parse into a view) so a ratio above 1 can be placed.
 *
 * Run: node --conditions=waymark-source --import tsx bench/replay-scale.ts [rounds]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { Client } from "../lib/client.ts";
import { durable } from "../lib/index.ts";
import { Engine } from "../lib/core/engine.ts";
import { JournalView } from "../lib/core/journal-view.ts";
import { createRegistry } from "../lib/core/registry.ts";
import { openLocalDatabase } from "../lib/local/database.ts";
import { SqliteJournalStore } from "../lib/local/sqlite-store.ts";
import { SqliteWakeTable } from "../lib/local/wake-table.ts";
import { systemClock } from "../lib/ports.ts";
import { summarise, timed } from "./stats.ts";

const ROUNDS = Number(process.argv[2] ?? 15);
const stepsThenSleep = durable({ name: "scale-sleep", input: z.object({ n: z.number() }) }, async ({ n }, step) => {
  for (let i = 0; i < n; i++) await step.run("s", () => ({ i, label: `item-${i}` }));
  await step.sleep("nap", "1h");
});

const dir = mkdtempSync(join(tmpdir(), "waymark-replay-scale-"));
try {
  const db = openLocalDatabase(join(dir, "scale.db"));
  const store = new SqliteJournalStore(db);
  const ports = { store, wakes: new SqliteWakeTable(db), clock: systemClock, workflows: createRegistry([stepsThenSleep]) };
  const client = new Client(ports);
  const engine = new Engine({ ...ports, owner: "scale", leaseTtlMs: 60_000 });
  const prepared = new Map<number, string>();
  for (const n of [1_000, 10_000]) {
    const runId = `scale-${n}`;
    await client.start(stepsThenSleep, { runId, input: { n } });
    if ((await engine.invoke(runId)).status !== "suspended") throw new Error(`prepare ${n}: not suspended`);
    prepared.set(n, runId);
  }
  const replay = async (n: number) => {
    const runId = prepared.get(n) ?? "";
    return timed(async () => {
      const r = await engine.invoke(runId);
      if (r.status !== "suspended") throw new Error(`replay ${n}: ${r.status}`);
    });
  };
  const cols: Record<string, number[]> = { small: [], large: [], ratio: [], load: [], parse: [] };
  for (let round = -2; round < ROUNDS; round++) {
    const small = await replay(1_000);
    const large = await replay(10_000);
    let journal: Awaited<ReturnType<typeof store.loadJournal>>;
    const load = await timed(async () => void (journal = await store.loadJournal(prepared.get(10_000) ?? "")));
    const parse = await timed(() => JournalView.parse("scale-10000", journal?.records ?? []));
    if (round < 0) continue; // warm-up
    cols.small?.push(small);
    cols.large?.push(large);
    cols.ratio?.push(large / (10 * small));
    cols.load?.push(load);
    cols.parse?.push(parse);
  }
  const m = (k: string) => summarise(cols[k] ?? []).median;
  console.log(`replay + re-suspend, ${ROUNDS} interleaved rounds (medians):`);
  console.log(`  1,000 steps   ${m("small").toFixed(2)} ms`);
  console.log(`  10,000 steps  ${m("large").toFixed(2)} ms   (load ${m("load").toFixed(2)} ms, parse ${m("parse").toFixed(2)} ms)`);
  console.log(`  10,000 ÷ (10 × 1,000), per round: median ${m("ratio").toFixed(2)}×, min ${Math.min(...(cols.ratio ?? [])).toFixed(2)}×, max ${Math.max(...(cols.ratio ?? [])).toFixed(2)}×`);
  db.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
