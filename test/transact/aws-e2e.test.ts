/**
 * step.transact end to end on the AWS runtime: the real Lambda handler over DynamoDB Local and
 * the SQS emulator (test/aws-e2e/harness.ts), the user's tables in the same DynamoDB Local.
 *
 *   a "Lambda" SIGKILLed right after the transaction (inside the next step's body): the
 *   redelivered wake replays the transaction from the journal, the item is written once;
 *   SIGKILLed inside the transact body (before it is sent): the body runs again, written once;
 *   every wake delivered twice (in one batch and across batches): written once per run.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { DeleteTableCommand } from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { until } from "../support/until.ts";
import { peers } from "../aws-e2e/endpoints.ts";
import { type E2e, createE2e } from "../aws-e2e/harness.ts";
import { awsTransactFlows, type UserTables } from "./aws-flows.ts";
import { createUserTable, getItem, putItem } from "./dynamo-tables.ts";
import type { TxChildSpec } from "./lambda-child.ts";

const childScript = fileURLToPath(new URL("./lambda-child.ts", import.meta.url));
let e2e: E2e;
let tables: UserTables;

async function harness(o: { visibilityTimeoutS?: number; leaseTtlMs?: number } = {}): Promise<void> {
  const { localDynamoClient } = await import("../setup/clients.ts");
  const client = localDynamoClient();
  tables = { stock: await createUserTable(client, "tx-stock", ["sku"]), ledger: await createUserTable(client, "tx-ledger", ["pk", "sk"]) };
  client.destroy();
  e2e = await createE2e({
    endpoints: peers(),
    workflows: (ledger) => awsTransactFlows(ledger, tables),
    ...(o.visibilityTimeoutS === undefined ? {} : { visibilityTimeoutS: o.visibilityTimeoutS }),
    ...(o.leaseTtlMs === undefined ? {} : { config: { leaseTtlMs: o.leaseTtlMs } }),
  });
}

async function dropTables(): Promise<void> {
  await Promise.all([tables.stock, tables.ledger].map((t) => e2e.clients.dynamodb.send(new DeleteTableCommand({ TableName: t }))));
  e2e.close();
}

/** Runs `runId` in a child "Lambda", SIGKILLs it once the ledger shows `victim` executed by it, and finishes the run here. */
async function killAt(runId: string, victim: string): Promise<number | undefined> {
  const spec: TxChildSpec = { endpoints: peers(), queues: e2e.queues, config: e2e.config, ledgerFile: e2e.ledger.file, clockOffset: e2e.clock.offset, tables };
  const child = spawn(process.execPath, ["--conditions=waymark-source", "--import", "tsx", childScript], { env: { ...process.env, WAYMARK_TX_CHILD: JSON.stringify(spec) }, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr.on("data", (d: Buffer) => (output += d.toString()));
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once("exit", (_code, signal) => resolve(signal)));
  try {
    const hit = await until(`the child to execute ${victim}`, () => e2e.ledger.read().find((e) => e.key === victim && e.pid === child.pid), 30_000, 5);
    child.kill("SIGKILL");
    expect(await exited, output).toBe("SIGKILL");
    expect(hit.pid).toBe(child.pid);
    return child.pid;
  } finally {
    child.kill("SIGKILL");
  }
}

describe("a Lambda SIGKILLed around step.transact", () => {
  beforeAll(() => harness({ visibilityTimeoutS: 3, leaseTtlMs: 1_500 }));
  afterAll(dropTables);

  it("killed after the transaction, inside the next step: the transaction is replayed, not sent again", async () => {
    const runId = "tx-crash-after";
    await putItem(e2e.clients.dynamodb, tables.stock, { sku: "S1", available: 10 });
    await e2e.client.start("tx-flow", { runId, input: { orderId: "o-after", sku: "S1", qty: 3, holdAfterMs: 1_000 } });
    await killAt(runId, `${runId}/after`);
    expect((await e2e.store.loadJournal(runId))?.records.map((r) => r.key)).toEqual(["step#reserve"]);
    await e2e.mapping().runUntil(e2e.finished([runId]), { what: "this process to finish the run" });
    const run = await e2e.run(runId);
    expect(run.status).toBe("completed");
    expect(run.result).toEqual({ reserved: 3 });
    expect(Object.fromEntries(e2e.ledger.counts(runId))).toEqual({ [`${runId}/reserve`]: 1, [`${runId}/after`]: 2 });
    expect(await getItem(e2e.clients.dynamodb, tables.stock, { sku: "S1" })).toEqual({ sku: "S1", available: 7 });
    expect(await getItem(e2e.clients.dynamodb, tables.ledger, { pk: "o-after", sk: "reserve" })).toEqual({ pk: "o-after", sk: "reserve", qty: 3 });
  });

  it("killed inside the transact body, before it was sent: the body runs again, the writes happen once", async () => {
    const runId = "tx-crash-inside";
    await putItem(e2e.clients.dynamodb, tables.stock, { sku: "S2", available: 10 });
    await e2e.client.start("tx-flow", { runId, input: { orderId: "o-inside", sku: "S2", qty: 4, holdInReserveMs: 1_000 } });
    await killAt(runId, `${runId}/reserve`);
    expect((await e2e.store.loadJournal(runId))?.records.map((r) => r.key)).toEqual([]);
    expect(await getItem(e2e.clients.dynamodb, tables.stock, { sku: "S2" })).toEqual({ sku: "S2", available: 10 });
    await e2e.mapping().runUntil(e2e.finished([runId]), { what: "this process to finish the run" });
    expect((await e2e.run(runId)).status).toBe("completed");
    expect(Object.fromEntries(e2e.ledger.counts(runId))).toEqual({ [`${runId}/reserve`]: 2, [`${runId}/after`]: 1 });
    expect(await getItem(e2e.clients.dynamodb, tables.stock, { sku: "S2" })).toEqual({ sku: "S2", available: 6 });
  });
});

describe("every wake delivered twice", () => {
  beforeAll(() => harness());
  afterAll(dropTables);

  it("in one batch and across batches: each run's writes happen once", async () => {
    const runs = Array.from({ length: 6 }, (_, i) => `tx-dup-${i + 1}`);
    for (const runId of runs) {
      await putItem(e2e.clients.dynamodb, tables.stock, { sku: `sku-${runId}`, available: 10 });
      await e2e.client.start("tx-flow", { runId, input: { orderId: runId, sku: `sku-${runId}`, qty: 1, nap: "1s" } });
    }
    await e2e.mapping({ duplicate: true }).runUntil(e2e.finished(runs), { what: "every run to finish", pollers: 2 });
    for (const runId of runs) {
      expect((await e2e.run(runId)).status, runId).toBe("completed");
      expect(await getItem(e2e.clients.dynamodb, tables.stock, { sku: `sku-${runId}` }), runId).toEqual({ sku: `sku-${runId}`, available: 9 });
    }
    expect(e2e.lines("wake").filter((l) => l.outcome === "duplicate-in-batch").length).toBeGreaterThanOrEqual(runs.length);
  });
});
