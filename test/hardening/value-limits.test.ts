/**
 * Issue 8, item 7: a step result the journal cannot hold. Before, the store refused the record,
 * the invocation failed, and every redelivery ran the step body again (a 500 KB result ran it six
 * times in three minutes). Now the step fails once, non-retryable, and the workflow sees it — on
 * every store: Waymark's own limit (256 KiB) is checked before any store is asked, and DynamoDB's
 * own refusal (tested with our limit raised above its 400 KB) is turned into the same failure.
 */
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { Client, createRegistry, durable, Engine, StepFailedError } from "waymark";
import { DynamoJournalStore } from "../../lib/aws/dynamodb-store.ts";
import { MemoryWakeQueue, VirtualClock } from "waymark/testing";
import { localDynamoClient } from "../setup/clients.ts";
import { createJournalTable, deleteTable } from "../setup/tables.ts";
import { type SqliteLab, sqliteLab } from "../support/sqlite-lab.ts";
import { Counter, Empty } from "../core/helpers.ts";

const calls = new Counter();
const bigFlow = durable({ name: "big-result", input: Empty, retries: 5 }, async (_in, step) => {
  try {
    await step.run("export", () => {
      calls.hit(`${step.runId}/export`);
      return "x".repeat(500 * 1024);
    });
    return "exported";
  } catch (err) {
    if (err instanceof StepFailedError) return `failed: ${err.failure.name}`;
    throw err;
  }
});
const bigRunResult = durable({ name: "big-run-result", input: Empty }, async (_in, step) => {
  await step.run("small", () => 1);
  return "y".repeat(300 * 1024);
});

let lab: SqliteLab | undefined;
afterEach(() => lab?.close());

describe("on SQLite (no limit of its own)", () => {
  it("the step fails once with ValueTooLargeError; its body ran once; the workflow handles it", async () => {
    lab = sqliteLab([bigFlow, bigRunResult]);
    await lab.client().start(bigFlow, { runId: "big-1", input: {} });
    expect(await lab.engine("w").invoke("big-1")).toEqual({ status: "completed", result: "failed: ValueTooLargeError" });
    expect(calls.count("big-1/export")).toBe(1);
    const record = (await lab.client().history("big-1")).entries.find((e) => e.key === "step#export")?.record;
    expect(record).toMatchObject({ status: "failed", attempts: 1, error: { name: "ValueTooLargeError" } });
  });

  it("a run result over the limit fails the run, once", async () => {
    lab = sqliteLab([bigFlow, bigRunResult]);
    await lab.client().start(bigRunResult, { runId: "big-2", input: {} });
    const res = await lab.engine("w").invoke("big-2");
    expect(res).toMatchObject({ status: "failed", error: { name: "ValueTooLargeError" } });
  });
});

describe("on DynamoDB Local", () => {
  const client = localDynamoClient();
  let tableName = "";
  afterAll(async () => {
    if (tableName) await deleteTable(client, tableName);
    client.destroy();
  });

  it("a result under Waymark's limit but over DynamoDB's item limit fails the step once, not every redelivery", async () => {
    tableName = await createJournalTable(client, "limits");
    const store = new DynamoJournalStore({ client, tableName });
    const ports = { store, wakes: new MemoryWakeQueue(), clock: new VirtualClock(), workflows: createRegistry([bigFlow]) };
    await new Client(ports).start(bigFlow, { runId: "big-3", input: {} });
    const engine = new Engine({ ...ports, owner: "w", maxValueBytes: 10 * 1024 * 1024 });
    expect(await engine.invoke("big-3")).toEqual({ status: "completed", result: "failed: ValueTooLargeError" });
    expect(calls.count("big-3/export")).toBe(1);
    expect(await engine.invoke("big-3")).toEqual({ status: "finished" });
  });
});

describe("values a caller hands in", () => {
  it("an input or signal payload over the limit is a clear InvalidInputError and nothing is written", async () => {
    const blobFlow = durable({ name: "blob", input: z.object({ blob: z.string() }), signals: { note: z.object({ text: z.string() }) } }, async (_in, step) => {
      await step.waitForSignal("note");
      return "ok";
    });
    lab = sqliteLab([blobFlow]);
    const client = lab.client();
    await expect(client.start(blobFlow, { runId: "big-in", input: { blob: "z".repeat(200 * 1024) } })).rejects.toMatchObject({ name: "InvalidInputError", message: expect.stringContaining("input too large") });
    expect(await lab.store.getRun("big-in")).toBeUndefined();
    await client.start(blobFlow, { runId: "small-in", input: { blob: "z" } });
    await expect(client.signal("small-in", "note", { text: "q".repeat(300 * 1024) })).rejects.toMatchObject({ name: "InvalidInputError", message: expect.stringContaining("payload too large") });
    expect((await lab.store.loadJournal("small-in"))?.records).toEqual([]);
  });
});
