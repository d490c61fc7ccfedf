/**
 * Children at scale (issue 19, item 3): a parent `step.invoke`s N one-step children at once and
 * awaits them all, on a SQLite file, executed by the local host loop (WakePool, 16 at once).
 * Counted at the ports, so every write is seen: the writes each child's end costs beyond the
 * child's own records (the `__child` signal in the parent's journal, a `markDue` of the parent,
 * a wake of the parent), and the parent's invocations. With `--aws`, the same fan-out on the AWS
 * runtime (compose-aws.ts: the Lambda handler, DynamoDB Local, the SQS emulator), DynamoDB
 * requests by operation and SQS messages per child.
 *
 * Run: node --conditions=waymark-source --import tsx bench/children.ts [N] [--aws]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { Client } from "../lib/client.ts";
import { Engine } from "../lib/core/engine.ts";
import { createRegistry } from "../lib/core/registry.ts";
import { durable } from "../lib/index.ts";
import { openLocalDatabase } from "../lib/local/database.ts";
import { SqliteJournalStore } from "../lib/local/sqlite-store.ts";
import { SqliteWakeTable } from "../lib/local/wake-table.ts";
import { type JournalStore, type PollableWakeQueue, systemClock } from "../lib/ports.ts";
import { WakePool } from "../lib/wake-loop.ts";
import { fmt, timed } from "./stats.ts";

const N = Number(process.argv.find((a) => /^\d+$/.test(a)) ?? 1_000);

const child = durable({ name: "bench-child", input: z.object({ i: z.number() }) }, async ({ i }, step) => step.run("work", () => i));
const parent = durable({ name: "bench-parent", input: z.object({ n: z.number() }) }, async ({ n }, step) => {
  const results = await Promise.all(Array.from({ length: n }, (_, i) => step.invoke("child", child, { input: { i } })));
  return results.length;
});

type Counts = Map<string, number>;
const add = (m: Counts, k: string) => m.set(k, (m.get(k) ?? 0) + 1);

/** Counts calls made through `inner` by method, and (for the parent's run) separately. */
function counting<T extends object>(inner: T, parentId: string, into: Counts): T {
  return new Proxy(inner, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        const first = args[0];
        const wake = typeof first === "object" && first !== null ? (first as { runId?: string }).runId : undefined;
        const who = first === parentId || wake === parentId || (typeof first === "string" && first.startsWith(`${parentId}@`)) ? "parent" : "other";
        add(into, `${String(prop)} (${who})`);
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

async function onSqlite(dir: string): Promise<void> {
  const db = openLocalDatabase(join(dir, "children.db"));
  const parentId = "fan";
  const ops: Counts = new Map();
  const store = counting<JournalStore>(new SqliteJournalStore(db), parentId, ops);
  const wakes = counting<PollableWakeQueue>(new SqliteWakeTable(db), parentId, ops);
  const ports = { store, wakes, clock: systemClock, workflows: createRegistry([parent, child]) };
  const client = new Client(ports);
  const engine = new Engine({ ...ports, owner: "bench", leaseTtlMs: 60_000 });
  let parentInvocations = 0;
  const pool = new WakePool({
    engine,
    wakes,
    clock: systemClock,
    visibilityMs: 120_000,
    concurrency: 16,
    onResult: (runId) => void (runId === parentId && parentInvocations++),
  });
  const ms = await timed(async () => {
    await client.start(parent, { runId: parentId, input: { n: N } });
    for (;;) {
      const run = await ports.store.getRun(parentId);
      if (run?.status === "completed") break;
      if (run?.status === "failed") throw new Error(`parent failed: ${JSON.stringify(run.error)}`);
      const took = await pool.fill();
      if (took === 0) await new Promise((r) => setTimeout(r, 1));
    }
  });
  await pool.idle();
  db.close();
  const get = (k: string) => ops.get(k) ?? 0;
  // Writes that a child's end makes on its parent: the signal into the parent's journal, markDue, the wake.
  const signals = [...ops].filter(([k]) => k === "appendRecord (parent)").reduce((a, [, v]) => a + v, 0);
  console.log(`SQLite file, local host loop (16 at once): ${N.toLocaleString("en")} children in ${fmt(ms)} ms; parent invocations ${parentInvocations}`);
  console.log(`  per child, on the parent: appendRecord ${(signals / N).toFixed(3)} (the __child signal, and the parent's own step records), markDue ${(get("markDue (parent)") / N).toFixed(3)}, wake ${(get("schedule (parent)") / N).toFixed(3)}, getRun ${(get("getRun (parent)") / N).toFixed(3)} (a read)`);
  const writes = ["appendRecord", "markDue", "schedule", "acquireLease", "releaseLease", "finishRun", "createRun", "renewLease", "ack", "cancel"];
  const parentWrites = writes.reduce((a, w) => a + get(`${w} (parent)`), 0);
  console.log(`  every write on the parent's run per child: ${(parentWrites / N).toFixed(3)} (${writes.filter((w) => get(`${w} (parent)`) > 0).map((w) => `${w} ${get(`${w} (parent)`)}`).join(", ")})`);
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "waymark-children-"));
  try {
    await onSqlite(dir);
    if (process.argv.includes("--aws")) {
      const { startDynamoDbLocal } = await import("../test/setup/dynamodb-local.ts");
      const { childrenOnAws } = await import("./compose-aws.ts");
      const dynamodb = await startDynamoDbLocal();
      try {
        const aws = await childrenOnAws(dynamodb.endpoint, N);
        console.log(aws.row.join("  |  "));
        for (const line of aws.detail) console.log(line);
      } finally {
        await dynamodb.stop();
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
