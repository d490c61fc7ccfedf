/**
 * `npm start`: the seed's test, as a demo. Order order-8472 runs on the local runtime, is
 * approved, and its worker is killed with SIGKILL the moment `charge` completes. A fresh worker
 * resumes the run from the SQLite journal: `charge` comes back from the journal, the card is
 * charged exactly once, and the run finishes.
 */
import { spawn } from "node:child_process";
import { mkdirSync, readFileSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { createLocalRuntime, formatTimeline } from "waymark/local";
import { orderFlow, type Order } from "../order-flow.ts";
import { FakePayments } from "../services/payments.ts";

const dir = resolve(process.env.WAYMARK_DEMO_DIR ?? ".waymark/demo");
const journal = join(dir, "journal.db");
const eventsFile = join(dir, "worker-events.jsonl");
const runId = "order-8472";
const order: Order = { orderId: "8472", sku: "LAMP-01", quantity: 1, amount: 129.5, email: "kim@example.com", address: "1 Harbour St, Leith" };

rmSync(dir, { recursive: true, force: true });
mkdirSync(dir, { recursive: true });
process.env.WAYMARK_DEMO_DIR = dir;

say(`Waymark demo: order ${runId} on a local SQLite journal (${journal})\n`);
const api = createLocalRuntime({ workflows: [orderFlow], file: journal }); // client only: no loop here
const order8472 = api.client.handle(orderFlow, runId); // typed by orderFlow: input, signals, result
await order8472.start(order);
say(`1. Started run ${runId}: reserve → fraud_check → wait for approval → charge → create_label → notify_customer`);

const first = worker(1, { DEMO_CRASH_AFTER: "charge" });
await until(async () => (await order8472.get()).waitingFor === "signal:approval", "the run to wait for approval");
say(`2. The run is suspended, waiting for signal "approval" (no process needs to stay up for it)`);
await order8472.signal("approval", { approved: true, approver: "ana@shop" }, { signalId: "approval-ana-1" });
say(`3. Approved by ana@shop; the worker resumes the run`);
const firstExit = await first;
const afterCrash = await order8472.get();
say(`4. Worker 1 died by ${firstExit.signal ?? `exit ${firstExit.code}`}; the run is "${afterCrash.status}", its lease held by a dead process`);
say(`   ledger so far: ${new FakePayments(dir).charges().length} charge(s)\n`);

const secondExit = await worker(2, {});
say(`5. Worker 2 exited with code ${secondExit.code}\n`);

const { run, entries } = await api.client.history(runId);
const events = readFileSync(eventsFile, "utf8").trim().split("\n").map((l) => JSON.parse(l) as { worker: string; stepId: string; outcome: string });
const charges = new FakePayments(dir).charges();
const chargeByWorker2 = events.filter((e) => e.worker === "2" && e.stepId === "charge").map((e) => e.outcome);
const checks: Array<[string, boolean]> = [
  ["worker 1 was killed with SIGKILL right after charge was recorded", firstExit.signal === "SIGKILL"],
  [`worker 2 took charge from the journal (${chargeByWorker2.join(", ") || "no event"}), it did not execute it`, chargeByWorker2.length === 1 && chargeByWorker2[0] === "replayed"],
  [`the run finished: ${run.status}`, run.status === "completed"],
  [`the ledger shows exactly one charge (${charges.map((c) => `${c.chargeId} ${c.amount}`).join(", ")})`, charges.length === 1],
];
for (const [text, ok] of checks) say(`${ok ? "✓" : "✗"} ${text}`);
say(`\n${formatTimeline(run, entries)}\n`);
say(`Inspect it yourself: npm run waymark -- runs show ${runId} --file ${journal}`);
await api.close();
process.exit(checks.every(([, ok]) => ok) ? 0 : 1);

function worker(n: number, env: Record<string, string>): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  const script = fileURLToPath(new URL("./worker.ts", import.meta.url));
  const child = spawn(process.execPath, ["--conditions=waymark-source", "--import", "tsx", script], {
    env: { ...process.env, WAYMARK_JOURNAL: journal, DEMO_RUN_ID: runId, DEMO_EVENTS: eventsFile, DEMO_WORKER: String(n), ...env },
    stdio: ["ignore", "inherit", "inherit"],
  });
  return new Promise((done) => child.on("exit", (code, signal) => done({ code, signal })));
}

async function until(check: () => Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function say(text: string): void {
  console.log(text);
}

