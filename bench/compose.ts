/**
 * Fan-out figures (issue 11): `step.map` over 1,000 items with `concurrency: 50` on a SQLite file
 * and on DynamoDB Local (started here), a fan-out of 1,000 child runs (`step.invoke`) on the local
 * runtime and on the AWS runtime (compose-aws.ts: the Lambda handler, DynamoDB Local, the SQS
 * emulator), and what a concurrency limit adds to a run's start and invocation: wall time, and
 * journal store operations per item (counted at the port, so every store counts the same way;
 * on the AWS runtime, DynamoDB requests counted by an SDK middleware). Printed, never asserted.
 * Run by `npm run bench`.
 */
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { z } from "zod";
import { Client, createRegistry, durable, Engine, type JournalStore } from "../lib/index.ts";
import { DynamoJournalStore } from "../lib/aws/dynamodb-store.ts";
import { openLocalDatabase } from "../lib/local/database.ts";
import { createLocalRuntime } from "../lib/local/runtime.ts";
import { SqliteJournalStore } from "../lib/local/sqlite-store.ts";
import { MemoryWakeQueue } from "../lib/testing/memory-wakes.ts";
import { systemClock } from "../lib/ports.ts";
import { startDynamoDbLocal } from "../test/setup/dynamodb-local.ts";
import { LOCAL_CREDENTIALS, LOCAL_REGION } from "../test/setup/local-aws.ts";
import { journalTableInput } from "../lib/aws/table-definition.ts";
import { CreateTableCommand } from "@aws-sdk/client-dynamodb";
import { fmt, repeat, timed } from "./stats.ts";
import { childrenOnAws } from "./compose-aws.ts";

const ITEMS = 1_000;
const CONCURRENCY = 50;

const mapFlow = durable({ name: "map-flow", input: z.object({ n: z.number() }) }, async ({ n }, step) => {
  const out = await step.map("item", Array.from({ length: n }, (_, i) => i), async (i) => i * 2, { concurrency: CONCURRENCY });
  return out.length;
});

/** Counts the journal store operations made through it. */
function counting(inner: JournalStore): { store: JournalStore; calls: () => number; reset: () => void } {
  let n = 0;
  const store = new Proxy(inner, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        n++;
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { store, calls: () => n, reset: () => void (n = 0) };
}

async function mapOn(label: string, inner: JournalStore): Promise<string[]> {
  const c = counting(inner);
  const ports = { store: c.store, wakes: new MemoryWakeQueue(), clock: systemClock, workflows: createRegistry([mapFlow]) };
  const client = new Client(ports);
  const engine = new Engine({ ...ports, owner: "bench" });
  let i = 0;
  let perItem = 0;
  const s = await repeat(async () => {
    const runId = `map-${Date.now()}-${i++}`;
    await client.start(mapFlow, { runId, input: { n: ITEMS } });
    c.reset();
    const ms = await timed(() => engine.invoke(runId));
    perItem = c.calls() / ITEMS;
    return ms;
  }, { runs: 5, warmup: 1 });
  return [label, `step.map ${ITEMS.toLocaleString("en")} items, concurrency ${CONCURRENCY}`, fmt(s.median), fmt(s.min), perItem.toFixed(2)];
}

async function childrenOnSqlite(dir: string): Promise<string[]> {
  const child = durable({ name: "child", input: z.object({ i: z.number() }) }, async ({ i }, step) => step.run("work", () => i));
  const parent = durable({ name: "parent", input: z.object({ n: z.number() }) }, async ({ n }, step) => {
    const results = await Promise.all(Array.from({ length: n }, (_, i) => step.invoke("child", child, { input: { i } })));
    return results.length;
  });
  const rt = createLocalRuntime({ workflows: [parent, child], file: join(dir, "children.db"), concurrency: 16 });
  rt.start();
  try {
    const ms = await timed(async () => {
      await rt.client.start(parent, { runId: "fan", input: { n: ITEMS } });
      await rt.waitForRun("fan", { timeoutMs: 600_000 });
    });
    return ["SQLite (local runtime)", `${ITEMS.toLocaleString("en")} child runs (step.invoke)`, fmt(ms), "", "(one run)"];
  } finally {
    await rt.close();
  }
}

/** One-step runs started and invoked one after another, with and without a concurrency limit (never reached). */
async function flowOverhead(dir: string): Promise<string[]> {
  const plain = durable({ name: "plain", input: z.object({ k: z.string() }) }, async (_in, step) => step.run("s", () => 1));
  const limited = durable({ name: "limited", input: z.object({ k: z.string() }), concurrency: { key: (i) => i.k, limit: 1_000 } }, async (_in, step) => step.run("s", () => 1));
  const db = openLocalDatabase(join(dir, "flow.db"));
  try {
    const c = counting(new SqliteJournalStore(db));
    const ports = { store: c.store, wakes: new MemoryWakeQueue(), clock: systemClock, workflows: createRegistry([plain, limited]) };
    const client = new Client(ports);
    const engine = new Engine({ ...ports, owner: "bench" });
    const N = 200;
    let seq = 0;
    const per = async (wf: typeof plain) =>
      repeat(async () => {
        const ids = Array.from({ length: N }, () => `${wf.name}-${seq++}`);
        return timed(async () => {
          for (const id of ids) {
            await client.start(wf, { runId: id, input: { k: "tenant-1" } });
            await engine.invoke(id);
          }
        }).then((ms) => ms / N);
      }, { runs: 5, warmup: 1 });
    const a = await per(plain);
    const b = await per(limited as unknown as typeof plain);
    c.reset();
    await client.start(limited, { runId: "ops", input: { k: "tenant-1" } });
    await engine.invoke("ops");
    const ops = c.calls();
    c.reset();
    await client.start(plain, { runId: "ops-plain", input: { k: "tenant-1" } });
    await engine.invoke("ops-plain");
    return ["SQLite file", `concurrency limit: +${fmt(b.median - a.median)} ms per run (${fmt(a.median)} → ${fmt(b.median)})`, fmt(b.median), fmt(b.min), `${ops} vs ${c.calls()} ops/run`];
  } finally {
    db.close();
  }
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "waymark-bench-compose-"));
  const dynamodb = await startDynamoDbLocal();
  const client = new DynamoDBClient({ endpoint: dynamodb.endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
  const rows: string[][] = [["store", "what", "median ms", "min ms", "store ops / item"]];
  let detail: string[] = [];
  try {
    const db = openLocalDatabase(join(dir, "map.db"));
    rows.push(await mapOn("SQLite file", new SqliteJournalStore(db)));
    db.close();
    const tableName = `bench-compose-${Date.now()}`;
    await client.send(new CreateTableCommand(journalTableInput(tableName)));
    rows.push(await mapOn("DynamoDB Local", new DynamoJournalStore({ client, tableName })));
    rows.push(await childrenOnSqlite(dir));
    const aws = await childrenOnAws(dynamodb.endpoint, ITEMS);
    rows.push(aws.row);
    detail = aws.detail;
    rows.push(await flowOverhead(dir));
  } finally {
    client.destroy();
    await dynamodb.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  console.log("\nFan-out (issue 11): step.map and child runs");
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => (r[c] ?? "").length)));
  for (const r of rows) console.log(`  ${r.map((cell, c) => (c < 2 ? cell.padEnd(widths[c] ?? 0) : cell.padStart(widths[c] ?? 0))).join("  ")}`);
  for (const line of detail) console.log(`  ${line}`);
}

await main();
