/**
 * A run's first invocation on DynamoDB reads no journal when the store can prove it empty
 * (issue 19): the start's query of the partition found nothing, so the meta item is marked
 * `emptyJournal`, and the first grant answers it. A writer outside a lease that writes to a run
 * never invoked (a signal sent before the first invocation) removes the mark first, so that
 * invocation reads the journal and finds the signal. Requests are counted with middleware on the
 * real client (`initialize` sees each command once), on DynamoDB Local.
 */
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { Client, createRegistry, durable, Engine, StepFailedError } from "waymark";
import { MemoryWakeQueue, VirtualClock } from "waymark/testing";
import { DynamoJournalStore } from "../../lib/aws/dynamodb-store.ts";
import { type CountedTable, countedTable } from "../support/counted-table.ts";
import { PausingStore } from "../support/pausing-store.ts";

const steps = durable({ name: "first-steps", input: z.object({}) }, async (_in, step) => {
  const a = await step.run("one", () => 1);
  return a + (await step.run("two", () => 2));
});

const approval = durable({ name: "first-approval", input: z.object({}), signals: { go: z.object({ ok: z.boolean() }) } }, async (_in, step) => {
  const go = await step.waitForSignal("go");
  return step.run("after", () => go.received && go.payload.ok);
});

/** A step that runs until the test lets it end. */
let letEnd: () => void = () => {};
let entered: () => void = () => {};
const held = durable({ name: "first-held", input: z.object({}) }, async (_in, step) =>
  step.run("hold", () => new Promise<string>((resolve) => {
    letEnd = () => resolve("ended");
    entered();
  })));
const adopter = durable({ name: "first-adopter", input: z.object({}) }, async (_in, step) => {
  try {
    return await step.invoke("c", held, { input: {}, runId: "raced-1" });
  } catch (err) {
    if (err instanceof StepFailedError) return { refused: err.failure.name };
    throw err;
  }
});

let table: CountedTable;
let client: DynamoDBClient;
let tableName: string;
let commands: string[];

beforeAll(async () => {
  table = await countedTable("first-invocation");
  ({ client, tableName, commands } = table);
});

afterAll(() => table.close());

function ports() {
  const store = new DynamoJournalStore({ client, tableName });
  return { store, wakes: new MemoryWakeQueue(), clock: new VirtualClock(Date.UTC(2026, 11, 6, 12)), workflows: createRegistry([steps, approval, held, adopter]) };
}

beforeEach(() => {
  commands.length = 0;
});

describe("a run's first invocation on DynamoDB Local", () => {
  it("reads no journal when the start found the partition empty: the grant, one PutItem per step, the finish", async () => {
    const p = ports();
    await new Client(p).start(steps, { runId: "fresh-1", input: {} });
    expect(commands).toEqual(["Query", "PutItem"]);
    commands.length = 0;
    // Cancellation looked for beside an append at most once a minute, as the AWS runtime does.
    expect(await new Engine({ ...p, owner: "inv-1", cancelProbeMs: 60_000 }).invoke("fresh-1")).toEqual({ status: "completed", result: 3 });
    expect(commands).toEqual(["UpdateItem", "PutItem", "PutItem", "UpdateItem"]);
  });

  it("reads the journal when a signal came before it: the signal is taken at once, not left for a later invocation", async () => {
    const p = ports();
    const client = new Client(p);
    await client.start(approval, { runId: "early-1", input: {} });
    const receipt = await client.signal("early-1", "go", { ok: true });
    expect(receipt.status).toBe("buffered");
    commands.length = 0;
    expect(await new Engine({ ...p, owner: "inv-1" }).invoke("early-1")).toEqual({ status: "completed", result: true });
    expect(commands.filter((c) => c === "Query")).toHaveLength(1);
  });

  it("reads the journal on every grant after the first, and on a child's first (its parent record precedes it)", async () => {
    const p = ports();
    await new Client(p).start(steps, { runId: "again-1", input: {} });
    const first = await p.store.acquireLease("again-1", { owner: "lost", now: p.clock.now(), ttlMs: 1_000 });
    expect(first).toMatchObject({ acquired: true, emptyJournal: true });
    p.clock.advance(1_001);
    commands.length = 0;
    expect(await new Engine({ ...p, owner: "inv-2" }).invoke("again-1")).toEqual({ status: "completed", result: 3 });
    expect(commands.filter((c) => c === "Query")).toHaveLength(1);

    await p.store.appendRecord("child-1", { key: "parent", body: { v: 1, at: 0, type: "parent", runId: "p", waitId: "w" } });
    await p.store.createRun({ runId: "child-1", workflow: "first-steps", input: {}, createdAt: p.clock.now() });
    expect(await p.store.acquireLease("child-1", { owner: "c", now: p.clock.now(), ttlMs: 1_000 })).not.toHaveProperty("emptyJournal");
  });

  it("a client's start and a parent's start of one id, interleaved: the parent's is refused, not left waiting for an end the run never sends (before: adopted, the run's first invocation skipped the journal and the parent record in it)", async () => {
    const p = ports();
    // The client's start has read the partition (empty) and its PutItem is held.
    let putHeld!: () => void;
    let letPut!: () => void;
    const putReached = new Promise<void>((r) => (putHeld = r));
    const putGate = new Promise<void>((r) => (letPut = r));
    client.middlewareStack.add(
      (next) => async (args) => {
        const item = (args.input as { Item?: Record<string, { S?: string }> }).Item;
        if (item?.pk?.S === "run#raced-1" && item.sk?.S === "meta" && item.workflow?.S === "first-held") {
          putHeld();
          await putGate;
        }
        return next(args);
      },
      { step: "initialize", name: "holdClientPut" },
    );
    try {
      const clientStart = new Client(p).start(held, { runId: "raced-1", input: {} });
      await putReached;
      // The parent's start writes its parent record, and is held before it creates the run.
      await new Client(p).start(adopter, { runId: "adopter-1", input: {} });
      const pausing = new PausingStore(p.store);
      const create = pausing.hold("createRun", "before", (args) => (args[0] as { runId: string }).runId === "raced-1");
      const parentInvocation = new Engine({ ...p, store: pausing.store, owner: "parent" }).invoke("adopter-1");
      await create.reached;
      // The client's put lands, marked empty (its query saw nothing); the run's first invocation
      // takes it at its word and is inside its step.
      letPut();
      expect(await clientStart).toMatchObject({ created: true, run: { status: "pending" } });
      const inStep = new Promise<void>((r) => (entered = r));
      const runInvocation = new Engine({ ...p, owner: "run" }).invoke("raced-1");
      await inStep;
      // The parent's start goes on and finds the run.
      create.release();
      expect(await parentInvocation).toEqual({ status: "completed", result: { refused: "RunConflictError" } });
      letEnd();
      expect(await runInvocation).toEqual({ status: "completed", result: "ended" });
      expect(await p.store.getRun("raced-1")).not.toHaveProperty("child");
    } finally {
      client.middlewareStack.remove("holdClientPut");
    }
  });
});
