/**
 * Issue 12 item 3: every `waymark runs` verb against a SQLite journal file and against a
 * DynamoDB table (DynamoDB Local, reached through the usual AWS settings as a user's would be),
 * with the exit codes they promise: 0 done, 1 refused, 2 usage, 3 journal unreachable.
 */
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createLocalRuntime, type LocalRuntime } from "waymark/local";
import { main } from "../../lib/cli/main.ts";
import { DynamoJournalStore } from "../../lib/aws/dynamodb-store.ts";
import { orderFlow, type Order } from "../../functions/order-flow.ts";
import { localDynamoClient } from "../setup/clients.ts";
import { LOCAL_CREDENTIALS, LOCAL_REGION } from "../setup/local-aws.ts";
import { createJournalTable, deleteTable } from "../setup/tables.ts";
import { tempDir } from "../http/helpers.ts";
import { until } from "../support/until.ts";
import type { JournalStore } from "../../lib/ports.ts";

const dir = tempDir("waymark-cli-");
const file = join(dir, "journal.db");
const module = new URL("../../functions/order-flow.ts", import.meta.url).pathname;
const order = (id: string): Order => ({ orderId: id, sku: "LAMP-01", quantity: 1, amount: 10, email: "kim@example.com", address: "1 Harbour St" });

let runtime: LocalRuntime;
const dynamo = localDynamoClient();
let table = "";
const savedEnv = { ...process.env };

async function cli(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(argv, (l) => void out.push(l), (l) => void err.push(l));
  return { code, out: out.join("\n"), err: err.join("\n") };
}

beforeAll(async () => {
  process.env.WAYMARK_DEMO_DIR = join(dir, "demo");
  runtime = createLocalRuntime({ workflows: [orderFlow], file });
  runtime.start();
  for (const id of ["c-1", "c-2", "c-3"]) await runtime.client.start(orderFlow, { runId: id, input: order(id) });
  await until("the runs to wait for approval", async () => (await runtime.client.list({ status: "suspended" })).runs.length === 3);
  // The same runs in a DynamoDB Local table, record for record.
  table = await createJournalTable(dynamo, "cli");
  const store = new DynamoJournalStore({ client: dynamo, tableName: table });
  for (const id of ["c-1", "c-2", "c-3"]) {
    const j = await runtime.store.loadJournal(id);
    if (!j) throw new Error(`no ${id}`);
    await store.createRun({ runId: id, workflow: j.run.workflow, input: j.run.input, createdAt: j.run.createdAt });
    for (const r of j.records) await store.appendRecord(id, r);
  }
  for (const s of [runtime.store, store]) await queuedRun(s);
  Object.assign(process.env, { AWS_REGION: LOCAL_REGION, AWS_ACCESS_KEY_ID: LOCAL_CREDENTIALS.accessKeyId, AWS_SECRET_ACCESS_KEY: LOCAL_CREDENTIALS.secretAccessKey, AWS_ENDPOINT_URL_DYNAMODB: inject("dynamodbEndpoint") });
});

/** A run waiting for a slot of its key (`queued`), as admission leaves it; not due for a year. */
async function queuedRun(store: JournalStore): Promise<void> {
  const now = Date.now();
  await store.createRun({ runId: "q-1", workflow: orderFlow.key, input: order("q-1"), createdAt: now });
  const grant = await store.acquireLease("q-1", { owner: "cli-test", now, ttlMs: 1_000 });
  if (!grant.acquired) throw new Error("q-1: no lease");
  await store.releaseLease("q-1", grant.lease.token, { now, wakeAt: now + 365 * 86_400_000, waitingFor: "queued:order-flow:kim", status: "queued" });
}

afterAll(async () => {
  await runtime.close();
  if (table) await deleteTable(dynamo, table);
  dynamo.destroy();
  for (const k of Object.keys(process.env)) if (!(k in savedEnv)) delete process.env[k];
  Object.assign(process.env, savedEnv);
});

describe.each([
  { target: "a SQLite file", where: () => ["--file", file] },
  { target: "a DynamoDB table", where: () => ["--table", table] },
])("waymark runs over $target", ({ where }) => {
  it("list, with --status and --json", async () => {
    const text = await cli("runs", "list", ...where());
    expect(text.code).toBe(0);
    for (const id of ["c-1", "c-2", "c-3"]) expect(text.out).toContain(id);
    // A header row names the columns, aligned with the rows under it.
    const [header, first] = text.out.split("\n");
    expect(header).toMatch(/^RUN ID +WORKFLOW +STATUS +UPDATED +DETAIL$/);
    expect(first?.indexOf(" order-flow ")).toBe(header?.indexOf(" WORKFLOW ") ?? -2);
    expect((await cli("runs", "list", "--status", "cancelled", ...where())).out).toBe("no runs");
    const json = await cli("runs", "list", "--json", "--limit", "2", ...where());
    const page = JSON.parse(json.out) as { runs: Array<{ runId: string }>; cursor?: string };
    expect(page.runs).toHaveLength(2);
    const rest = JSON.parse((await cli("runs", "list", "--json", "--cursor", page.cursor ?? "", ...where())).out) as { runs: Array<{ runId: string }> };
    expect([...page.runs, ...rest.runs].map((r) => r.runId).filter((id) => id.startsWith("c-")).sort()).toEqual(["c-1", "c-2", "c-3"]);
    expect((await cli("runs", "list", "--status", "completed", ...where())).out).not.toContain("c-1");
    expect((await cli("runs", "list", "--status", "sleeping", ...where())).code).toBe(2);
    const queued = await cli("runs", "list", "--status", "queued", ...where());
    expect(queued.code).toBe(0);
    expect(queued.out).toMatch(/^q-1 +order-flow +queued .*queued:order-flow:kim$/m);
    expect(queued.out).not.toContain("c-1");
    expect((await cli("runs", "list", "--status", "suspended", ...where())).out).not.toContain("q-1");
    expect((await cli("runs", "show", "q-1", ...where())).out).toContain("status queued");
  });

  it("show, as a timeline and as JSON; an unknown run is exit 1", async () => {
    const text = await cli("runs", "show", "c-1", ...where());
    expect(text.code).toBe(0);
    expect(text.out).toMatch(/reserve\s+run\s+ok/);
    expect(text.out).toMatch(/approval\s+wait\s+waiting/);
    const json = JSON.parse((await cli("runs", "show", "c-1", "--json", ...where())).out) as { run: { runId: string }; entries: unknown[] };
    expect(json.run.runId).toBe("c-1");
    expect(json.entries.length).toBeGreaterThanOrEqual(3);
    const missing = await cli("runs", "show", "nope", ...where());
    expect(missing.code).toBe(1);
    expect(missing.err).toContain("RunNotFoundError");
  });

  it("start checks the input against the workflow's code", async () => {
    const id = `new-${where()[0]?.slice(2)}`;
    expect((await cli("runs", "start", "order-flow", "--run-id", id, "--input", JSON.stringify(order("n")), ...where())).code).toBe(2); // no --workflows
    const bad = await cli("runs", "start", "order-flow", "--run-id", id, "--input", '{"orderId":""}', "--workflows", module, ...where());
    expect(bad.code).toBe(1);
    expect(bad.err).toContain("InvalidInputError");
    expect(bad.err).toContain("sku");
    const ok = await cli("runs", "start", "order-flow", "--run-id", id, "--input", JSON.stringify(order("n")), "--workflows", module, ...where());
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.out)).toMatchObject({ runId: id, created: true });
    expect((await cli("runs", "show", id, "--json", ...where())).code).toBe(0);
  });

  it("signal delivers to the open wait; a payload that fails the schema is exit 1", async () => {
    const bad = await cli("runs", "signal", "c-2", "approval", "--payload", '{"approved":"yes"}', "--workflows", module, ...where());
    expect(bad.code).toBe(1);
    expect(bad.err).toContain("InvalidInputError");
    const ok = await cli("runs", "signal", "c-2", "approval", "--payload", '{"approved":true,"approver":"cli"}', "--signal-id", "cli-1", "--workflows", module, ...where());
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.out)).toMatchObject({ runId: "c-2", status: "delivered", waitId: "approval" });
  });

  it("cancel asks the run to cancel (journaled, with the reason); once the run has ended, cancel again is exit 1", async () => {
    const first = await cli("runs", "cancel", "c-3", "--reason", "customer withdrew", ...where());
    expect(first.code).toBe(0);
    // The file's local runtime delivers the request (the order compensates); the table's copy of
    // c-3 never ran (it was created there without an invocation), so it ends at once.
    expect(JSON.parse(first.out)).toEqual(where()[0] === "--file" ? { runId: "c-3", outcome: "requested", status: "cancelling" } : { runId: "c-3", outcome: "cancelled", status: "cancelled" });
    if (where()[0] === "--file") {
      const shown = JSON.parse((await cli("runs", "show", "c-3", "--json", ...where())).out) as { entries: Array<{ key: string; record?: { reason?: string } }> };
      expect(shown.entries.find((e) => e.key === "cancel")?.record?.reason).toBe("customer withdrew");
      expect(await runtime.waitForRun("c-3", { timeoutMs: 120_000 })).toMatchObject({ status: "cancelled", error: { fields: { reason: "customer withdrew" } } });
    }
    expect(JSON.parse((await cli("runs", "show", "c-3", "--json", ...where())).out)).toMatchObject({ run: { status: "cancelled" } });
    const again = await cli("runs", "cancel", "c-3", ...where());
    expect(again.code).toBe(1);
    expect(again.err).toContain("already finished");
  });

  it("history export", async () => {
    const res = await cli("runs", "history", "export", "c-1", ...where());
    expect(res.code).toBe(0);
    expect(JSON.parse(res.out)).toMatchObject({ run: { runId: "c-1" } });
  });
});

describe("waymark runs: help and errors", () => {
  it("--help on every verb", async () => {
    for (const verb of ["list", "show", "start", "signal", "cancel", "history"]) {
      const res = await cli("runs", verb, "--help");
      expect(res.code).toBe(0);
      expect(res.out).toContain(`waymark runs ${verb}`);
    }
    expect((await cli("runs", "--help")).out).toContain("waymark runs list");
    expect((await cli("--help")).out).toContain("waymark dev <module>");
    expect((await cli("dev", "--help")).out).toContain("tsx");
    expect((await cli("dashboard", "--help")).out).toContain("--table");
    expect((await cli("runs", "frobnicate")).code).toBe(2);
  });

  it("an unreachable journal is exit 3 with what to do", async () => {
    const noFile = await cli("runs", "list", "--file", join(dir, "missing.db"));
    expect(noFile.code).toBe(3);
    expect(noFile.err).toContain("no journal at");
    const noTable = await cli("runs", "list", "--table", "no-such-table");
    expect(noTable.code).toBe(3);
    expect(noTable.err).toContain('no DynamoDB table "no-such-table"');
    expect((await cli("runs", "list", "--file", file, "--table", table)).code).toBe(2);
  });

  it("starting in a table without a wake queue says how the run will be woken", async () => {
    const res = await cli("runs", "start", "order-flow", "--run-id", "dy-note", "--input", JSON.stringify(order("d")), "--workflows", module, "--table", table);
    expect(res.code).toBe(0);
    expect(res.err).toContain("watchdog");
  });
});
