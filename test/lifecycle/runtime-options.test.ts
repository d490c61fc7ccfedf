/**
 * Issue 20 item 8: what every runtime takes that only a hand-built `Engine` took, and what it
 * says when something is missing. `journalLimits` on `createTestRuntime`, `createLocalRuntime`
 * and the AWS runtime (`createAwsRuntime` / `createLambdaHandler`); a `notify` wait on a
 * runtime without a webhook secret fails with an error that names where that runtime's secret
 * goes, instead of "this runtime has no webhook secret configured" alone.
 */
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { durable, type JournalLimits, type RunMeta } from "waymark";
import { createTestRuntime } from "waymark/testing";
import { createLocalRuntime } from "waymark/local";
import { createAwsRuntime, type AwsRuntime } from "../../lib/aws/runtime.ts";
import { createWakeQueues, e2eClients, e2eConfig } from "../aws-e2e/harness.ts";
import { peers } from "../aws-e2e/endpoints.ts";
import { createJournalTable, deleteTable } from "../setup/tables.ts";
import { tempDir } from "../http/helpers.ts";

const Approval = z.object({ approved: z.boolean() });
/** Asks its approver through a link. */
const withLink = durable({ name: "with-link", input: z.object({}), signals: { approval: Approval } }, async (_in, step) => {
  const a = await step.waitForSignal("approval", { timeout: "1h", notify: () => {} });
  return a.received;
});
/** Twelve steps, then a short sleep: the invocation after it loads a journal past a limit of 10 records. */
const long = durable({ name: "long", input: z.object({}) }, async (_in, step) => {
  for (let i = 0; i < 12; i++) await step.run("tick", () => i);
  await step.sleep("pause", "10ms");
  return "done";
});
const limits: Partial<JournalLimits> = { warnRecords: 5, maxRecords: 10 };

function expectNamesTheSecret(run: RunMeta, hint: string): void {
  expect(run.status).toBe("failed");
  expect(run.error?.name).toBe("WorkflowDefinitionError");
  expect(run.error?.message).toContain('wait "approval" asks for an approval link (notify), but this runtime has no webhook secret configured');
  expect(run.error?.message).toContain(hint);
}

function expectJournalLimit(run: RunMeta): void {
  expect(run.status).toBe("failed");
  expect(run.error?.name).toBe("JournalLimitError");
}

describe("the test runtime", () => {
  it("names createTestRuntime({ webhook: { secret } }) when a wait asks for a link", async () => {
    const rt = createTestRuntime({ workflows: [withLink] });
    await rt.start(withLink, { runId: "t-1", input: {} });
    expectNamesTheSecret(await rt.get("t-1"), "createTestRuntime({ workflows, webhook: { secret } })");
    // With the secret the same wait mints its link and waits.
    const ok = createTestRuntime({ workflows: [withLink], webhook: { secret: "s".repeat(32) } });
    await ok.start(withLink, { runId: "t-1", input: {} });
    expect((await ok.get("t-1")).status).toBe("suspended");
  });

  it("takes journalLimits", async () => {
    const rt = createTestRuntime({ workflows: [long], journalLimits: limits });
    await rt.start(long, { runId: "t-2", input: {} });
    await rt.advance("1s");
    expectJournalLimit(await rt.get("t-2"));
    const unlimited = createTestRuntime({ workflows: [long] });
    await unlimited.start(long, { runId: "t-2", input: {} });
    await unlimited.advance("1s");
    expect((await unlimited.get("t-2")).status).toBe("completed");
  });
});

describe("the local runtime", () => {
  it("names createLocalRuntime({ webhook }) when a wait asks for a link, and takes journalLimits", async () => {
    const runtime = createLocalRuntime({ workflows: [withLink, long], file: join(tempDir("waymark-options-"), "journal.db"), journalLimits: limits });
    await runtime.start();
    try {
      await runtime.client.start(withLink, { runId: "l-1", input: {} });
      await runtime.client.start(long, { runId: "l-2", input: {} });
      expectNamesTheSecret(await runtime.waitForRun("l-1", { timeoutMs: 30_000 }), "createLocalRuntime({ workflows, webhook: { secret } })");
      expectJournalLimit(await runtime.waitForRun("l-2", { timeoutMs: 30_000 }));
    } finally {
      await runtime.close();
    }
  });
});

describe("the AWS runtime (DynamoDB Local, the SQS emulator)", () => {
  const clients = e2eClients(peers());
  let table = "";
  afterAll(async () => {
    if (table) await deleteTable(clients.dynamodb, table);
    clients.dynamodb.destroy();
    clients.sqs.destroy();
  });

  it("names the function's secret when a wait asks for a link, and takes journalLimits", async () => {
    table = await createJournalTable(clients.dynamodb, "options");
    const queues = await createWakeQueues(clients.sqs, `options-${process.pid}-${Date.now().toString(36)}`, { visibilityTimeoutS: 30, maxReceiveCount: 3 });
    // No webhook secret in the configuration: the construct's `webhook: false`.
    const rt: AwsRuntime = await createAwsRuntime({ workflows: [withLink, long], config: e2eConfig(table, queues), clients, journalLimits: limits, log: () => {}, metrics: false, tracing: false });
    await rt.client.start(withLink, { runId: "a-1", input: {} });
    await rt.client.start(long, { runId: "a-2", input: {} });
    expect(await rt.engine.invoke("a-1")).toMatchObject({ status: "failed" });
    expect(await rt.engine.invoke("a-2")).toMatchObject({ status: "suspended" });
    // The next invocation loads 13 records: over the limit before it runs anything.
    expect(await rt.engine.invoke("a-2")).toMatchObject({ status: "failed" });
    expectNamesTheSecret(await rt.client.get("a-1"), "keep the DurableFunction construct's `webhook` on (the default), or set WAYMARK_WEBHOOK_SECRET");
    expectJournalLimit(await rt.client.get("a-2"));
  });
});
