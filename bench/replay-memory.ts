/**
 * What a replay allocates: a run of N recorded steps (then a sleep) is invoked again and again on
 * SQLite, each invocation replaying every step and suspending again, while V8's sampling heap
 * profiler counts every allocation, the ones collected since included. Prints the bytes
 * allocated per replayed step and the functions that allocate them (self bytes). Whatever a
 * replay allocates is collected again, and a replay that outlives a young-generation collection
 * has it copied and promoted first: allocation is most of a replay's collector time.
 *
 * Run: npm run build && node --import tsx bench/replay-memory.ts [steps=1000] [replays=100]
 * (the build users install; --conditions=waymark-source measures the sources through tsx).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { Client, createRegistry, durable, Engine, systemClock } from "waymark";
import { openLocalDatabase, SqliteJournalStore, SqliteWakeTable } from "waymark/local";

interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: ProfileNode[];
}

const [stepsArg = "1000", replaysArg = "100"] = process.argv.slice(2).filter((a) => /^\d+$/.test(a));
const STEPS = Number(stepsArg);
const REPLAYS = Number(replaysArg);

const sleeper = durable({ name: "replay-memory", input: z.object({ n: z.number() }) }, async ({ n }, step) => {
  for (let i = 0; i < n; i++) await step.run("s", () => i);
  await step.sleep("nap", "1h");
});

const dir = mkdtempSync(join(tmpdir(), "waymark-replay-memory-"));
const db = openLocalDatabase(join(dir, "journal.db"));
try {
  const ports = { store: new SqliteJournalStore(db), wakes: new SqliteWakeTable(db), clock: systemClock, workflows: createRegistry([sleeper]) };
  const engine = new Engine({ ...ports, owner: "replay-memory", leaseTtlMs: 60_000 });
  await new Client(ports).start(sleeper, { runId: "r", input: { n: STEPS } });
  if ((await engine.invoke("r")).status !== "suspended") throw new Error("the run did not suspend");
  for (let i = 0; i < 20; i++) await engine.invoke("r"); // warm: optimised code, the journal's rows kept

  const session = new Session();
  session.connect();
  await session.post("HeapProfiler.startSampling", { samplingInterval: 512, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
  for (let i = 0; i < REPLAYS; i++) await engine.invoke("r");
  const { profile } = (await session.post("HeapProfiler.stopSampling")) as { profile: { head: ProfileNode } };
  session.disconnect();

  const bySelf = new Map<string, number>();
  let total = 0;
  const walk = (node: ProfileNode): void => {
    const f = node.callFrame;
    const where = `${f.functionName || "(anonymous)"} ${f.url.replace(/^.*?\/(lib|bench|node_modules)\//, "$1/")}:${f.lineNumber + 1}`;
    total += node.selfSize;
    bySelf.set(where, (bySelf.get(where) ?? 0) + node.selfSize);
    for (const child of node.children) walk(child);
  };
  walk(profile.head);
  const perStep = (bytes: number) => bytes / REPLAYS / STEPS;
  console.log(`replay of ${STEPS.toLocaleString("en")} steps + re-suspend, ${REPLAYS} replays, node ${process.version}`);
  console.log(`allocated: ${(total / REPLAYS / 1024).toFixed(0)} KiB a replay, ${perStep(total).toFixed(0)} bytes a replayed step (sampled every 512 bytes)`);
  for (const [where, bytes] of [...bySelf].sort((a, b) => b[1] - a[1]).slice(0, 12)) {
    console.log(`  ${perStep(bytes).toFixed(0).padStart(5)} B/step  ${where}`);
  }
} finally {
  db.close();
  rmSync(dir, { recursive: true, force: true });
}
