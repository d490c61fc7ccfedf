/**
 * Issue 10, item 2: history checks before deploy. Histories exported from real journals (a SQLite
 * file and a DynamoDB Local table) are replayed against today's code without running a step or
 * writing anything; every divergence is reported with the step and both stories.
 */
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, inject, it } from "vitest";
import { z } from "zod";
import { durable } from "waymark";
import { type RunHistory, createTestRuntime, replayHistories } from "waymark/testing";
import { main } from "../../lib/cli/main.ts";
import { DynamoJournalStore } from "../../lib/aws/dynamodb-store.ts";
import { orderFlow } from "../../functions/order-flow.ts";
import { localDynamoClient } from "../setup/clients.ts";
import { LOCAL_CREDENTIALS, LOCAL_REGION } from "../setup/local-aws.ts";
import { createJournalTable, deleteTable } from "../setup/tables.ts";
import { type SqliteLab, sqliteLab } from "../support/sqlite-lab.ts";
import { recorded } from "./fixtures/flows.ts";
import { renamed } from "./fixtures/renamed.ts";

const fixture = (f: string) => new URL(`./fixtures/${f}`, import.meta.url).pathname;
const golden = (f: string) => JSON.parse(readFileSync(new URL(`../golden/${f}`, import.meta.url), "utf8")) as RunHistory;

/** Records three runs of `recorded`: waiting, approved and shipped, timed out. */
async function recordHistories(): Promise<RunHistory[]> {
  const rt = createTestRuntime({ workflows: [recorded] });
  for (const id of ["h-wait", "h-ship", "h-late"]) await rt.start(recorded, { runId: id, input: { orderId: id } });
  await rt.signal("h-ship", "approval", { approved: true });
  await rt.advance("2d");
  const out: RunHistory[] = [];
  for (const id of ["h-wait", "h-ship", "h-late"]) {
    const j = await rt.store.loadJournal(id);
    if (j) out.push({ run: j.run, records: j.records });
  }
  return out;
}

const collect = () => {
  const lines: string[] = [];
  return { lines, push: (l: string) => void lines.push(l) };
};

describe("replayHistories", () => {
  it("the example workflow replays its golden histories", async () => {
    const reports = await replayHistories({ workflows: [orderFlow], histories: [golden("order-flow.waiting.history.json"), golden("order-flow.shipped.history.json")] });
    expect(reports.map((r) => [r.ok, r.reached])).toEqual([[true, "suspended"], [true, "completed"]]);
  });

  it("reports a renamed step with the recorded and the new story; runs that never reached it still pass", async () => {
    const histories = await recordHistories();
    histories[0]!.run = { ...histories[0]!.run }; // h-wait: before the approval
    const reports = await replayHistories({ workflows: [renamed], histories });
    const byRun = Object.fromEntries(reports.map((r) => [r.runId, r]));
    expect(byRun["h-wait"]?.ok).toBe(true);
    expect(byRun["h-late"]?.ok).toBe(true);
    expect(byRun["h-ship"]).toMatchObject({ ok: false, error: { name: "NonDeterminismError" } });
    expect(byRun["h-ship"]?.error?.message).toMatch(/"charge_card"/);
    expect(byRun["h-ship"]?.error?.message).toMatch(/"charge"/);
  });

  it("reports a step inserted before recorded ones unless it is behind step.patched()", async () => {
    const histories = await recordHistories();
    const body = (patched: boolean) =>
      durable({ name: "checkout", input: z.object({ orderId: z.string() }), signals: { approval: z.object({ approved: z.boolean() }) } }, async ({ orderId }, step) => {
        await step.run("reserve", () => `hold-${orderId}`);
        if (!patched || step.patched("fraud")) await step.run("fraud_check", () => 0.1);
        const approval = await step.waitForSignal("approval", { timeout: "1d" });
        if (!approval.received) return "expired";
        await step.run("charge", () => `ch-${orderId}`);
        return step.run("ship", () => `label-${orderId}`);
      });
    const unguarded = await replayHistories({ workflows: [body(false)], histories });
    expect(unguarded.every((r) => !r.ok)).toBe(true);
    expect(unguarded[0]?.error).toMatchObject({ name: "NonDeterminismError", fields: { stepId: "fraud_check" } });
    expect(unguarded[0]?.error?.message).toMatch(/wait step "approval" next/);
    const guarded = await replayHistories({ workflows: [body(true)], histories });
    expect(guarded.map((r) => r.ok)).toEqual([true, true, true]);
  });

  it("names a history whose workflow version is not among the workflows given", async () => {
    const [h] = await recordHistories();
    const [report] = await replayHistories({ workflows: [orderFlow], histories: [h!] });
    expect(report).toMatchObject({ ok: false, error: { name: "UnknownWorkflowError" } });
  });
});

describe("waymark history export and waymark check", () => {
  let lab: SqliteLab | undefined;
  const dynamo = localDynamoClient();
  let table = "";
  afterEach(() => lab?.close());
  afterAll(async () => {
    if (table) await deleteTable(dynamo, table);
    dynamo.destroy();
  });

  it("exports from a SQLite file and from a DynamoDB table; check passes today's code and fails the renamed step", async () => {
    const dir = mkdtempSync(join(tmpdir(), "waymark-histories-"));
    // A run in a real SQLite journal, approved and shipped.
    lab = sqliteLab([recorded]);
    await lab.client().start(recorded, { runId: "sq-1", input: { orderId: "sq-1" } });
    await lab.engine("w").invoke("sq-1");
    await lab.client().signal("sq-1", "approval", { approved: true });
    expect(await lab.engine("w").invoke("sq-1")).toMatchObject({ status: "completed" });
    const o = collect();
    const e = collect();
    expect(await main(["history", "export", "sq-1", "--file", lab.file, "--out", join(dir, "sq-1.json")], o.push, e.push)).toBe(0);

    // The same run in DynamoDB Local, exported with --table through the usual AWS settings.
    table = await createJournalTable(dynamo, "history");
    const store = new DynamoJournalStore({ client: dynamo, tableName: table });
    const history = JSON.parse(readFileSync(join(dir, "sq-1.json"), "utf8")) as RunHistory;
    await store.createRun({ runId: "dy-1", workflow: history.run.workflow, input: history.run.input, createdAt: history.run.createdAt });
    for (const r of history.records) await store.appendRecord("dy-1", r);
    const env: Record<string, string> = { AWS_REGION: LOCAL_REGION, AWS_ACCESS_KEY_ID: LOCAL_CREDENTIALS.accessKeyId, AWS_SECRET_ACCESS_KEY: LOCAL_CREDENTIALS.secretAccessKey, AWS_ENDPOINT_URL_DYNAMODB: inject("dynamodbEndpoint") };
    const saved = { ...process.env };
    Object.assign(process.env, env);
    try {
      const d = collect();
      expect(await main(["history", "export", "dy-1", "--table", table], d.push, e.push)).toBe(0);
      writeFileSync(join(dir, "dy-1.json"), d.lines.join("\n"));
    } finally {
      for (const k of Object.keys(env)) if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
    }
    expect(readdirSync(dir).sort()).toEqual(["dy-1.json", "sq-1.json"]);

    const ok = collect();
    expect(await main(["check", "--histories", dir, "--workflows", fixture("flows.ts")], ok.push, e.push)).toBe(0);
    expect(ok.lines.at(-1)).toBe("2 of 2 histories replay on today's code");

    const bad = collect();
    const badErr = collect();
    expect(await main(["check", "--histories", dir, "--workflows", fixture("renamed.ts")], bad.push, badErr.push)).toBe(1);
    expect(badErr.lines).toHaveLength(2);
    expect(badErr.lines[0]).toMatch(/^FAIL  dy-1\.json  dy-1 \(checkout\): NonDeterminismError: .*"charge_card"/);
  });

  it("usage errors exit 2; an unknown run exits 1 and writes nothing", async () => {
    lab = sqliteLab([recorded]);
    const o = collect();
    const e = collect();
    expect(await main(["check", "--histories", "/nonexistent"], o.push, e.push)).toBe(2);
    expect(await main(["history", "export", "nope", "--file", lab.file], o.push, e.push)).toBe(1);
    expect(e.lines.at(-1)).toMatch(/nope/);
  });
});
