/**
 * What the DynamoDB store promises beyond the shared contract, on DynamoDB Local: paginated
 * journal reads past 1 MB, the 400 KB item limit, one request per append, retries of throttling
 * and transaction conflicts, TTL on finished runs, and a run id reused after its retention.
 *
 * Requests are counted with middleware on the real client: `initialize` sees each command once,
 * `deserialize` sits inside the SDK's retry loop and sees every HTTP attempt.
 */
import { randomUUID } from "node:crypto";
import {
  GetItemCommand,
  ProvisionedThroughputExceededException,
  TransactionConflictException,
  type DynamoDBClient,
} from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from "vitest";
import { createJournalDynamoClient } from "../../lib/aws/dynamodb-client.ts";
import { DynamoJournalStore } from "../../lib/aws/dynamodb-store.ts";
import { InvalidCursorError } from "../../lib/core/errors.ts";
import { DYNAMODB_ITEM_LIMIT_BYTES, RecordTooLargeError } from "../../lib/aws/errors.ts";
import { LOCAL_CREDENTIALS, LOCAL_REGION } from "../setup/local-aws.ts";
import { localDynamoClient } from "../setup/clients.ts";
import { createJournalTable, deleteTable } from "../setup/tables.ts";

const T = 1_700_000_000_000;
const runIdOf = (label: string): string => `${label}-${randomUUID()}`;

interface Traffic {
  commands: string[];
  attempts: string[];
  /** Errors to throw, in order, from the next HTTP attempts (before they reach DynamoDB Local). */
  faults: Error[];
}

/** A client whose every command and HTTP attempt is recorded, with injectable faults. */
function instrumented(client: DynamoDBClient): Traffic {
  const traffic: Traffic = { commands: [], attempts: [], faults: [] };
  client.middlewareStack.add(
    (next, context) => async (args) => {
      traffic.commands.push(context.commandName ?? "?");
      return next(args);
    },
    { step: "initialize", name: "countCommands" },
  );
  client.middlewareStack.add(
    (next, context) => async (args) => {
      traffic.attempts.push(context.commandName ?? "?");
      const fault = traffic.faults.shift();
      if (fault) throw fault;
      return next(args);
    },
    { step: "deserialize", name: "countAttempts", priority: "low" },
  );
  return traffic;
}

let admin: DynamoDBClient;
let client: DynamoDBClient;
let traffic: Traffic;
let tableName: string;
let store: DynamoJournalStore;

beforeAll(async () => {
  admin = localDynamoClient();
  tableName = await createJournalTable(admin, "store");
  client = await createJournalDynamoClient({ endpoint: inject("dynamodbEndpoint"), region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
  traffic = instrumented(client);
  store = new DynamoJournalStore({ client, tableName, retentionDays: 7 });
});

afterAll(async () => {
  await deleteTable(admin, tableName);
  admin.destroy();
  client.destroy();
});

beforeEach(() => {
  traffic.commands.length = 0;
  traffic.attempts.length = 0;
  traffic.faults.length = 0;
});

async function newRun(label: string, createdAt = T): Promise<string> {
  const runId = runIdOf(label);
  await store.createRun({ runId, workflow: "flow", input: { label }, createdAt });
  return runId;
}

describe("DynamoJournalStore on DynamoDB Local", () => {
  it("loads a journal larger than one 1 MB query page, every record, in write order", async () => {
    const runId = await newRun("big-journal");
    const filler = "x".repeat(40_000);
    // Keys in reverse of write order: the table sorts by key, the journal reads in write order.
    const keys = Array.from({ length: 30 }, (_, i) => `step#s${String(29 - i).padStart(2, "0")}`);
    for (const key of keys) expect(await store.appendRecord(runId, { key, body: { key, filler } })).toEqual({ written: true });

    traffic.commands.length = 0;
    const journal = await store.loadJournal(runId);
    expect(journal?.records.map((r) => r.key)).toEqual(keys);
    expect(journal?.records.every((r) => (r.body as { filler: string }).filler.length === 40_000)).toBe(true);
    const queries = traffic.commands.filter((c) => c === "QueryCommand").length;
    expect(queries, "30 × 40 KB is over 1 MB, so more than one page").toBeGreaterThanOrEqual(2);
  });

  it("refuses a record over 400 KB with RecordTooLargeError naming run, key and size, and writes nothing", async () => {
    const runId = await newRun("too-large");
    const err = await store.appendRecord(runId, { key: "step#huge", body: { blob: "y".repeat(DYNAMODB_ITEM_LIMIT_BYTES) } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RecordTooLargeError);
    const tooLarge = err as RecordTooLargeError;
    expect(tooLarge.name).toBe("RecordTooLargeError");
    expect(tooLarge.retryable).toBe(false);
    expect(tooLarge).toMatchObject({ runId, key: "step#huge", limitBytes: DYNAMODB_ITEM_LIMIT_BYTES });
    expect(tooLarge.sizeBytes).toBeGreaterThan(DYNAMODB_ITEM_LIMIT_BYTES);
    expect(tooLarge.message).toContain(runId);
    expect(tooLarge.message).toContain("step#huge");
    expect(tooLarge.message).toContain(String(tooLarge.sizeBytes));
    expect(traffic.commands.filter((c) => c === "PutItemCommand")).toHaveLength(1); // createRun's only
    expect((await store.loadJournal(runId))?.records).toEqual([]);
  });

  it("accepts a record of exactly 400 KB as DynamoDB counts it (the size estimate is not short)", async () => {
    const runId = await newRun("at-limit");
    // Find the blob length whose item is exactly at the limit, by the store's own refusal.
    const overhead = await sizeOf(runId, "step#edge", "");
    const blob = "z".repeat(DYNAMODB_ITEM_LIMIT_BYTES - overhead);
    expect(await store.appendRecord(runId, { key: "step#edge", body: { blob } })).toEqual({ written: true });
    const over = await store.appendRecord(runId, { key: "step#edge2", body: { blob: `${blob}zz` } }).catch((e: unknown) => e);
    expect(over).toBeInstanceOf(RecordTooLargeError);
    expect((await store.loadJournal(runId))?.records.map((r) => r.key)).toEqual(["step#edge"]);
  });

  it("appends a record with exactly one request, and answers a duplicate with one request and no retry", async () => {
    const runId = await newRun("one-request");
    traffic.commands.length = 0;
    traffic.attempts.length = 0;
    expect(await store.appendRecord(runId, { key: "step#charge", body: { charge: "ch_1" } })).toEqual({ written: true });
    expect(traffic.commands).toEqual(["PutItemCommand"]);
    expect(traffic.attempts).toEqual(["PutItemCommand"]);

    const dup = await store.appendRecord(runId, { key: "step#charge", body: { charge: "ch_2" } });
    expect(dup).toEqual({ written: false, existing: { key: "step#charge", body: { charge: "ch_1" } } });
    expect(traffic.commands).toEqual(["PutItemCommand", "PutItemCommand"]);
    expect(traffic.attempts).toEqual(["PutItemCommand", "PutItemCommand"]);
  });

  it("retries throttling with backoff: the append succeeds once, after the throttled attempts", async () => {
    const runId = await newRun("throttled");
    traffic.faults.push(throttled(), throttled());
    traffic.commands.length = 0;
    traffic.attempts.length = 0;
    expect(await store.appendRecord(runId, { key: "step#a", body: 1 })).toEqual({ written: true });
    expect(traffic.commands).toEqual(["PutItemCommand"]);
    expect(traffic.attempts).toEqual(["PutItemCommand", "PutItemCommand", "PutItemCommand"]);
    expect((await store.loadJournal(runId))?.records).toEqual([{ key: "step#a", body: 1 }]);
  });

  it("surfaces throttling that outlasts the client's attempts as the SDK's error", async () => {
    // A client with 2 attempts keeps this quick; the journal's own client makes 6.
    const brief = await createJournalDynamoClient({ endpoint: inject("dynamodbEndpoint"), region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS, maxAttempts: 2 });
    const seen = instrumented(brief);
    const briefStore = new DynamoJournalStore({ client: brief, tableName });
    const runId = await newRun("throttled-out");
    seen.faults.push(throttled(), throttled());
    const err = await briefStore.renewLease(runId, 1, T, 1_000).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProvisionedThroughputExceededException);
    expect(seen.attempts).toEqual(["UpdateItemCommand", "UpdateItemCommand"]);
    brief.destroy();
  });

  it("retries TransactionConflictException, which the SDK does not", async () => {
    const runId = await newRun("conflict");
    const conflict = (): Error => new TransactionConflictException({ message: "conflict", $metadata: { httpStatusCode: 400 } });
    traffic.faults.push(conflict(), conflict());
    traffic.commands.length = 0;
    expect(await store.appendRecord(runId, { key: "step#a", body: "ok" })).toEqual({ written: true });
    expect(traffic.commands).toEqual(["PutItemCommand", "PutItemCommand", "PutItemCommand"]);
  });

  it("stamps a finished run's meta item with expiresAt (TTL, epoch seconds) after the retention", async () => {
    const runId = await newRun("ttl");
    const lease = await store.acquireLease(runId, { owner: "a", now: T, ttlMs: 1_000 });
    await store.appendRecord(runId, { key: "step#a", body: 1 });
    expect(await rawAttr(runId, "meta", "expiresAt")).toBeUndefined();
    expect(await store.finishRun(runId, { now: T + 1_500, status: "completed", result: 1, expect: { token: lease.acquired ? lease.lease.token : 0 } })).toBe(true);
    expect(await rawAttr(runId, "meta", "expiresAt")).toBe(String(Math.ceil((T + 1_500) / 1000) + 7 * 86_400));
    expect(await rawAttr(runId, "meta", "gsi2pk")).toBeUndefined(); // out of the due index
  });

  it("a run id reused after its retention starts clean: the old records are swept", async () => {
    const runId = await newRun("reused", T);
    await store.appendRecord(runId, { key: "step#old", body: "from the first life" });
    await store.finishRun(runId, { now: T + 1, status: "completed", expect: { neverInvoked: true } });
    // Within retention the finished run is the answer.
    expect(await store.createRun({ runId, workflow: "flow", input: 2, createdAt: T + 2 })).toMatchObject({ created: false, run: { status: "completed" } });
    // Past it (TTL may not have deleted the item yet: AWS takes up to days), a new life begins.
    const later = Date.now() + 8 * 86_400_000;
    const again = await store.createRun({ runId, workflow: "flow", input: 2, createdAt: later });
    expect(again).toMatchObject({ created: true, run: { status: "pending", input: 2, leaseToken: 0 } });
    expect(await store.loadJournal(runId)).toEqual({ run: again.run, records: [] });
  });

  it("a fresh run costs one probe of its partition and one put; an existing one the probe alone, which finds its meta item", async () => {
    const runId = runIdOf("create-cost");
    traffic.commands.length = 0;
    await store.createRun({ runId, workflow: "flow", input: 1, createdAt: T });
    expect(traffic.commands).toEqual(["QueryCommand", "PutItemCommand"]);
    traffic.commands.length = 0;
    expect(await store.createRun({ runId, workflow: "flow", input: 1, createdAt: T + 5 })).toMatchObject({ created: false, run: { runId, input: 1, createdAt: T } });
    expect(traffic.commands).toEqual(["QueryCommand"]);
  });

  it("a child's fresh run (its parent record written first) costs the same two requests; records of an earlier life are still swept", async () => {
    // The parent record precedes the child's run (run/children.ts): it is this life's, not a leftover.
    const child = runIdOf("fresh-child");
    await store.appendRecord(child, { key: "parent", body: { v: 1, at: T, type: "parent", runId: "p", waitId: "child" } });
    traffic.commands.length = 0;
    expect((await store.createRun({ runId: child, workflow: "flow", input: 1, createdAt: T })).created).toBe(true);
    expect(traffic.commands).toEqual(["QueryCommand", "PutItemCommand"]);
    expect((await store.loadJournal(child))?.records.map((r) => r.key)).toEqual(["parent"]);

    // No meta item, and a record written more than a minute before the new run: an earlier life's, swept.
    const reused = runIdOf("leftover-without-meta");
    await store.appendRecord(reused, { key: "step#old", body: "from an earlier life" });
    const later = Date.now() + 8 * 86_400_000;
    expect((await store.createRun({ runId: reused, workflow: "flow", input: 2, createdAt: later })).created).toBe(true);
    expect((await store.loadJournal(reused))?.records).toEqual([]);
  });

  it("a repeated start finds the live run past a page of older records, and sweeps none of them", async () => {
    const runId = await newRun("many-before-meta", T);
    // 120 keys that sort before "meta": the probe's first page (100 items) ends before the meta item.
    await Promise.all(Array.from({ length: 120 }, (_, i) => store.appendRecord(runId, { key: `attempt#s#${i}`, body: i })));
    await store.appendRecord(runId, { key: "step#s", body: "done" });
    traffic.commands.length = 0;
    // Its records are older than a minute before this start: they are the live run's, not leftovers.
    const again = await store.createRun({ runId, workflow: "flow", input: { label: "many-before-meta" }, createdAt: Date.now() + 8 * 86_400_000 });
    expect(again).toMatchObject({ created: false, run: { runId, createdAt: T } });
    expect(traffic.commands).toEqual(["QueryCommand", "QueryCommand"]);
    expect((await store.loadJournal(runId))?.records).toHaveLength(121);
  });

  it("sweeps an earlier life's records on both sides of the meta item's key when no meta item is left", async () => {
    const reused = runIdOf("leftovers-both-sides");
    for (const key of ["attempt#a#1", "cancel", "parent", "step#a", "signal#s"]) await store.appendRecord(reused, { key, body: key });
    const later = Date.now() + 8 * 86_400_000;
    expect((await store.createRun({ runId: reused, workflow: "flow", input: 2, createdAt: later })).created).toBe(true);
    expect((await store.loadJournal(reused))?.records).toEqual([]);
    expect(await store.appendRecord(reused, { key: "step#a", body: "new" })).toEqual({ written: true });
  });

  it("refuses a grant for a wake's time to a suspended run not due by then, with one request and nothing written", async () => {
    const runId = await newRun("not-due", T);
    const first = await store.acquireLease(runId, { owner: "o", now: T, ttlMs: 30_000 });
    if (!first.acquired) throw new Error("no lease");
    await store.releaseLease(runId, first.lease.token, { now: T + 10, wakeAt: T + 3_600_000, waitingFor: "sleep:nap" });
    const before = await store.getRun(runId);
    traffic.commands.length = 0;
    // A duplicate of the start wake, delivered again while the run sleeps for an hour.
    expect(await store.acquireLease(runId, { owner: "dup", now: T + 20, ttlMs: 30_000, dueBy: T + 20 })).toEqual({ acquired: false, reason: "not-due", run: before });
    expect(traffic.commands).toEqual(["UpdateItemCommand"]);
    expect(await store.getRun(runId)).toEqual(before);
    // The sleep's own wake finds it due; so does any wake once the run was marked due.
    const woken = await store.acquireLease(runId, { owner: "w", now: T + 3_600_000, ttlMs: 30_000, dueBy: T + 3_600_000 });
    expect(woken).toMatchObject({ acquired: true, run: { status: "running", leaseToken: 2 } });
    if (!woken.acquired) throw new Error("no lease");
    await store.releaseLease(runId, woken.lease.token, { now: T + 3_600_010, waitingFor: "signal:go" }); // no wakeAt: a signal only
    expect(await store.acquireLease(runId, { owner: "x", now: T + 3_600_020, ttlMs: 30_000, dueBy: T + 3_600_020 })).toMatchObject({ acquired: false, reason: "not-due" });
    await store.markDue(runId, T + 3_600_030);
    expect(await store.acquireLease(runId, { owner: "y", now: T + 3_600_040, ttlMs: 30_000, dueBy: T + 3_600_040 })).toMatchObject({ acquired: true });
  });

  it("marks a leased run due on release with one UpdateItem when told of its lease, two when not", async () => {
    const runId = await newRun("due-on-release", T);
    const granted = await store.acquireLease(runId, { owner: "o", now: T, ttlMs: 30_000 });
    if (!granted.acquired) throw new Error("no lease");
    traffic.commands.length = 0;
    await store.markDue(runId, T + 10);
    expect(traffic.commands).toEqual(["UpdateItemCommand", "UpdateItemCommand"]); // the suspended transition, refused, then the leased one
    traffic.commands.length = 0;
    await store.markDue(runId, T + 5, { token: granted.lease.token });
    expect(traffic.commands).toEqual(["UpdateItemCommand"]);
    expect((await store.getRun(runId))?.dueOnRelease).toBe(T + 5);
    // Told of a lease that is gone (released meanwhile): the refusal's item leads to the suspended transition.
    await store.releaseLease(runId, granted.lease.token, { now: T + 20, waitingFor: "signal:x" });
    expect((await store.getRun(runId))?.wakeAt).toBe(T + 5);
    await store.markDue(runId, T + 1, { token: granted.lease.token });
    expect((await store.getRun(runId))?.wakeAt).toBe(T + 1);
  });

  it("refuses a cursor it did not hand out", async () => {
    await expect(store.listRuns({ cursor: "bm90LWEtY3Vyc29y" })).rejects.toBeInstanceOf(InvalidCursorError);
  });
});

function throttled(): Error {
  return new ProvisionedThroughputExceededException({ message: "slow down", $metadata: { httpStatusCode: 400 } });
}

/** The item size the store computes for a record with this blob, from its refusal of a huge one. */
async function sizeOf(runId: string, key: string, blob: string): Promise<number> {
  const pad = DYNAMODB_ITEM_LIMIT_BYTES;
  const err = await store.appendRecord(runId, { key, body: { blob: blob + "z".repeat(pad) } }).catch((e: unknown) => e);
  if (!(err instanceof RecordTooLargeError)) throw new Error("expected a refusal");
  return err.sizeBytes - pad;
}

async function rawAttr(runId: string, sk: string, name: string): Promise<string | undefined> {
  const out = await admin.send(new GetItemCommand({ TableName: tableName, Key: { pk: { S: `run#${runId}` }, sk: { S: sk } }, ConsistentRead: true }));
  const v = out.Item?.[name];
  return v?.S ?? v?.N;
}
