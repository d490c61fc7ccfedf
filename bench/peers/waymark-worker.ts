/**
 * Waymark's side of the peer comparison, in a process of its own like each peer's (run.ts
 * forks it). The embedded runtime as bench/perf.ts measures it: a SQLite file in WAL mode,
 * `synchronous=NORMAL` (and `FULL` for the one extra row), `client.start` then `Engine.invoke`
 * for one run; `createLocalRuntime` (concurrency 16) for the 200 runs.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
// By the package's name, as bench/perf.ts: its build (dist/) unless run with --conditions=waymark-source.
import { Client, createRegistry, durable, Engine, systemClock } from "waymark";
import { createLocalRuntime, type Durability, openLocalDatabase, SqliteJournalStore, SqliteWakeTable } from "waymark/local";
import { timed } from "../stats.ts";
import { serveWorker } from "./workers/serve.mjs";

const Input = z.object({ n: z.number() });

const steps = durable({ name: "peers-steps", input: Input }, async ({ n }, step) => {
  let last = 0;
  for (let i = 0; i < n; i++) last = await step.run("s", () => i);
  return last;
});
const stepsThenWait = durable({ name: "peers-wait", input: Input, signals: { go: z.object({}) } }, async ({ n }, step) => {
  for (let i = 0; i < n; i++) await step.run("s", () => i);
  const got = await step.waitForSignal("go", { timeout: "1h" });
  return got.received;
});
const fiveSteps = durable({ name: "peers-five", input: Input }, async ({ n }, step) => {
  for (let i = 0; i < n; i++) await step.run("s", () => i);
});
const workflows = [steps, stepsThenWait, fiveSteps];

const dir = mkdtempSync(join(tmpdir(), "waymark-peers-"));
let seq = 0;
const id = (p: string) => `${p}-${++seq}`;

function harness(file: string, durability: Durability) {
  const db = openLocalDatabase(file, { durability });
  const ports = { store: new SqliteJournalStore(db), wakes: new SqliteWakeTable(db), clock: systemClock, workflows: createRegistry(workflows) };
  return { db, client: new Client(ports), engine: new Engine({ ...ports, owner: "peers", leaseTtlMs: 60_000 }) };
}
type Harness = ReturnType<typeof harness>;

const normal = harness(join(dir, "normal.db"), "normal");
const full = harness(join(dir, "full.db"), "full");

function expect(status: string, want: string, what: string): void {
  if (status !== want) throw new Error(`${what}: ${status}, expected ${want}`);
}

async function sequential(h: Harness, n: number): Promise<number> {
  const run = id("seq");
  return timed(async () => {
    await h.client.start(steps, { runId: run, input: { n } });
    expect((await h.engine.invoke(run)).status, "completed", "sequential");
  });
}

/** A run suspended on a signal after n steps (not timed), then the signal and the invocation that replays and completes it. */
async function resume(n: number): Promise<number> {
  const run = id("wait");
  await normal.client.start(stepsThenWait, { runId: run, input: { n } });
  expect((await normal.engine.invoke(run)).status, "suspended", "prepare wait");
  return timed(async () => {
    await normal.client.signal(run, "go", {});
    expect((await normal.engine.invoke(run)).status, "completed", "resume");
  });
}

async function manyRuns(runs: number, stepsPerRun: number): Promise<number> {
  const rt = createLocalRuntime({ workflows, file: join(dir, `many-${++seq}.db`), concurrency: 16, tracing: false });
  await rt.start();
  try {
    const ids = Array.from({ length: runs }, () => id("five"));
    const ms = await timed(async () => {
      for (const r of ids) await rt.client.start(fiveSteps, { runId: r, input: { n: stepsPerRun } });
      for (const r of ids) expect((await rt.waitForRun(r)).status, "completed", "five");
    });
    return runs / (ms / 1000);
  } finally {
    await rt.close();
  }
}

serveWorker({
  init: async () => `node ${process.version}`,
  seq: ({ n }) => sequential(normal, n),
  seqFull: ({ n }) => sequential(full, n),
  resume: ({ n }) => resume(n),
  many: ({ runs, steps: k }) => manyRuns(runs, k),
  close: async () => {
    normal.db.close();
    full.db.close();
    rmSync(dir, { recursive: true, force: true });
    return 0;
  },
});
