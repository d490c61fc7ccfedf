/**
 * Retention on AWS, on DynamoDB Local with the journal table's stream enabled (OLD_IMAGE, as the
 * construct deploys it), through the real Lambda handler.
 *
 * DynamoDB Local runs streams but not TTL, so the expiry is simulated the way TTL does it: a
 * delete of the meta item conditional on its `expiresAt` having passed. The `REMOVE` record is
 * then read back from the local stream (a real stream record, keys, old image and sequence
 * number) and given the `userIdentity` AWS documents for TTL deletions,
 * `{ type: "Service", principalId: "dynamodb.amazonaws.com" }`, which DynamoDB Local cannot
 * produce. Time moves with a faked `Date` (retention is a day), so `writtenAt` stamps, TTLs and
 * creation times agree as they do in production.
 */
import { DeleteItemCommand, DescribeTableCommand, QueryCommand, UpdateTableCommand } from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { durable } from "waymark";
import type { ApprovalLink } from "../../lib/core/definition.ts";
import type { DynamoStreamEvent, DynamoStreamRecord, FunctionUrlEvent, FunctionUrlResponse } from "../../lib/aws/lambda-types.ts";
import { handleRetentionStream } from "../../lib/aws/retention-stream.ts";
import { peers } from "../aws-e2e/endpoints.ts";
import { lambdaContext } from "../aws-e2e/event-source.ts";
import { type E2e, createE2e } from "../aws-e2e/harness.ts";
import { readStream, type StreamApiRecord } from "../support/dynamodb-streams.ts";

const SECRET = "retention-webhook-secret-0123456789abcdef";
const DAY_MS = 86_400_000;
const links: ApprovalLink[] = [];
const charges: number[] = [];

const retained = durable(
  { name: "retained", input: z.object({ life: z.number().int() }).strict(), signals: { approval: z.object({ approved: z.boolean() }) } },
  async (input, step) => {
    await step.run("charge", () => {
      charges.push(input.life);
      return { life: input.life };
    });
    const decision = await step.waitForSignal("approval", { notify: (link) => void links.push(link) });
    return decision.received ? { life: input.life, approved: decision.payload.approved } : { life: input.life, approved: false };
  },
);

let e2e: E2e;
let streamArn: string;

beforeAll(async () => {
  // `Date` only, advancing with real time; tests move it forward, never back (journal write
  // stamps are monotonic within a process, as they are in a Lambda container).
  vi.useFakeTimers({ toFake: ["Date"], shouldAdvanceTime: true });
  e2e = await createE2e({ endpoints: peers(), workflows: () => [retained], config: { webhookSecret: SECRET, publicUrl: "https://hooks.example.test", retentionDays: 1 } });
  await e2e.clients.dynamodb.send(new UpdateTableCommand({ TableName: e2e.tableName, StreamSpecification: { StreamEnabled: true, StreamViewType: "OLD_IMAGE" } }));
  const described = await e2e.clients.dynamodb.send(new DescribeTableCommand({ TableName: e2e.tableName }));
  streamArn = described.Table?.LatestStreamArn ?? "";
  expect(streamArn).not.toBe("");
});
afterAll(() => {
  vi.useRealTimers();
  e2e.close();
});

/** Starts a run through the handler and drives it until it waits for its approval. */
async function startAndWait(runId: string, life: number): Promise<ApprovalLink> {
  const before = links.length;
  expect(await e2e.handler({ waymark: "start", runId, input: { life } }, lambdaContext())).toMatchObject({ ok: true, created: true });
  await e2e.mapping().runUntil(async () => (await e2e.store.getRun(runId))?.waitingFor === "signal:approval", { what: `${runId} waiting` });
  const link = links.slice(before).find((l) => l.runId === runId);
  if (!link) throw new Error("no approval link was minted");
  return link;
}

/** A run that charged, got a signal, and completed; its link is returned unused. */
async function finishedRun(runId: string): Promise<ApprovalLink> {
  const link = await startAndWait(runId, 1);
  await e2e.client.signal(runId, "approval", { approved: true }, { signalId: `${runId}-old-signal` });
  await e2e.mapping().runUntil(e2e.finished([runId]), { what: `${runId} finished` });
  return link;
}

/** The run's items as DynamoDB holds them (sort keys). */
async function itemsOf(runId: string): Promise<string[]> {
  const out = await e2e.clients.dynamodb.send(new QueryCommand({ TableName: e2e.tableName, KeyConditionExpression: "pk = :pk", ExpressionAttributeValues: { ":pk": { S: `run#${runId}` } }, ConsistentRead: true }));
  return (out.Items ?? []).map((i) => i.sk?.S ?? "").sort();
}

/** Past the run's retention (one day), with `Date` itself moved so that every clock agrees. */
function passRetention(): void {
  vi.setSystemTime(Date.now() + DAY_MS + 120_000);
}

/** What TTL does: delete the meta item, only if its `expiresAt` has passed. */
async function ttlExpire(runId: string): Promise<void> {
  await e2e.clients.dynamodb.send(new DeleteItemCommand({
    TableName: e2e.tableName,
    Key: { pk: { S: `run#${runId}` }, sk: { S: "meta" } },
    ConditionExpression: "expiresAt <= :now",
    ExpressionAttributeValues: { ":now": { N: String(Math.floor(Date.now() / 1000)) } },
  }));
}

/** The stream's REMOVE of the run's meta item, as Lambda would deliver it; `ttl` adds TTL's identity. */
async function removeOfMeta(runId: string, ttl: boolean): Promise<DynamoStreamEvent> {
  const records = await readStream(peers().dynamodb, streamArn);
  const remove = records.find((r) => r.eventName === "REMOVE" && r.dynamodb.Keys.pk?.S === `run#${runId}` && r.dynamodb.Keys.sk?.S === "meta");
  if (!remove) throw new Error(`no REMOVE of ${runId}'s meta item on the stream`);
  return { Records: [toLambdaRecord(remove, ttl)] };
}

function toLambdaRecord(r: StreamApiRecord, ttl: boolean): DynamoStreamRecord {
  return {
    eventID: r.eventID,
    eventName: r.eventName,
    eventSource: "aws:dynamodb",
    eventSourceARN: streamArn,
    ...(ttl ? { userIdentity: { type: "Service", principalId: "dynamodb.amazonaws.com" } } : {}),
    dynamodb: {
      Keys: r.dynamodb.Keys,
      ...(r.dynamodb.OldImage ? { OldImage: r.dynamodb.OldImage } : {}),
      SequenceNumber: r.dynamodb.SequenceNumber,
      ...(r.dynamodb.ApproximateCreationDateTime === undefined ? {} : { ApproximateCreationDateTime: r.dynamodb.ApproximateCreationDateTime }),
    },
  };
}

function approveThrough(link: ApprovalLink): Promise<unknown> {
  const path = new URL(link.url ?? "").pathname;
  const body = JSON.stringify({ approved: true });
  const event: FunctionUrlEvent = { version: "2.0", rawPath: path, headers: { "content-type": "application/json" }, body, isBase64Encoded: false, requestContext: { http: { method: "POST", path } } };
  return e2e.handler(event, lambdaContext());
}

describe("retention of every item on DynamoDB (TTL on the meta item, the stream for the rest)", () => {
  it("a TTL REMOVE of the meta item deletes the run's records; a reused id sees nothing of the old run and its old link is refused", async () => {
    const runId = "order-retained";
    const oldLink = await finishedRun(runId);
    const oldRun = await e2e.run(runId);
    expect(await itemsOf(runId)).toEqual(expect.arrayContaining(["meta", "step#charge", "step#approval", `signal#${runId}-old-signal`]));

    passRetention();
    await ttlExpire(runId);
    expect(await itemsOf(runId)).not.toContain("meta");

    // A delete by anyone else than TTL (no service identity) is not retention: nothing happens.
    expect(await e2e.handler(await removeOfMeta(runId, false), lambdaContext())).toEqual({ batchItemFailures: [] });
    expect((await itemsOf(runId)).length).toBeGreaterThan(2);

    const ttlRemove = await removeOfMeta(runId, true);
    expect(await e2e.handler(ttlRemove, lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(await itemsOf(runId)).toEqual([]);
    expect(e2e.lines("retention", runId).at(-1)).toMatchObject({ level: "info", createdAt: oldRun.createdAt, kept: 0 });
    // Redelivered (a stream record may come twice): nothing left, nothing fails.
    expect(await e2e.handler(ttlRemove, lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(e2e.lines("retention", runId).at(-1)).toMatchObject({ deleted: 0, kept: 0 });

    // The id again, with another input: a new run that replays nothing of the old one.
    const newLink = await startAndWait(runId, 2);
    expect(charges.filter((c) => c === 2)).toHaveLength(1); // the step ran again, its old result was not adopted
    const history = await e2e.store.loadJournal(runId);
    expect(history?.run).toMatchObject({ input: { life: 2 }, status: "suspended", leaseToken: 1, invocations: 1 });
    expect(history?.run.createdAt).toBeGreaterThan(oldRun.createdAt);
    const keys = history?.records.map((r) => r.key);
    expect(keys).toEqual(["step#charge", "step#approval", "step#approval:notify"]);
    expect(JSON.stringify(history)).not.toContain("old-signal");

    // The old run's approval link (not expired by time: links live 7 days) is refused, and writes nothing.
    const stale = (await approveThrough(oldLink)) as FunctionUrlResponse;
    expect(stale.statusCode).toBe(410);
    expect(JSON.parse(stale.body)).toMatchObject({ error: { name: "LinkExpiredError", message: expect.stringMatching(/earlier run/) } });
    expect((await e2e.store.loadJournal(runId))?.records.map((r) => r.key)).toEqual(keys);
    const fresh = (await approveThrough(newLink)) as FunctionUrlResponse;
    expect(fresh.statusCode, fresh.body).toBeLessThan(300);
  });

  it("a late TTL REMOVE never deletes a newer run that reused the id", async () => {
    const runId = "order-reused-early";
    await finishedRun(runId);
    passRetention();
    await ttlExpire(runId);
    const ttlRemove = await removeOfMeta(runId, true);

    // The id is started again before the stream is processed.
    await startAndWait(runId, 3);
    const before = await e2e.store.loadJournal(runId);
    expect(before?.records.map((r) => r.key)).toEqual(["step#charge", "step#approval", "step#approval:notify"]);

    expect(await e2e.handler(ttlRemove, lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(await e2e.store.loadJournal(runId)).toEqual(before);
    expect(e2e.lines("retention", runId).at(-1)).toMatchObject({ deleted: 0, kept: 3 });
  });

  it("ignores other stream records, and reports the first failed one so Lambda retries from there", async () => {
    const purged: string[] = [];
    const log: unknown[] = [];
    const target = {
      store: {
        purgeRun: async (run: { runId: string }) => {
          if (run.runId === "broken") throw new Error("throttled");
          purged.push(run.runId);
          return { deleted: 1, kept: 0 };
        },
      },
      log: (entry: unknown) => void log.push(entry),
    };
    const service = { type: "Service", principalId: "dynamodb.amazonaws.com" };
    const meta = (runId: string, seq: string, extra: Partial<DynamoStreamRecord> = {}): DynamoStreamRecord => ({
      eventName: "REMOVE",
      eventSource: "aws:dynamodb",
      userIdentity: service,
      dynamodb: {
        Keys: { pk: { S: `run#${runId}` }, sk: { S: "meta" } },
        OldImage: { pk: { S: `run#${runId}` }, sk: { S: "meta" }, runId: { S: runId }, createdAt: { N: "1700000000000" }, expiresAt: { N: "1702592001" } },
        SequenceNumber: seq,
      },
      ...extra,
    });
    const event: DynamoStreamEvent = {
      Records: [
        meta("insert", "1", { eventName: "INSERT" }),
        meta("user-delete", "2", { userIdentity: undefined }),
        { ...meta("a-step", "3"), dynamodb: { Keys: { pk: { S: "run#a-step" }, sk: { S: "step#charge" } }, SequenceNumber: "3" } },
        meta("first", "4"),
        meta("broken", "5"),
        meta("after", "6"),
      ],
    };
    expect(await handleRetentionStream(target, event)).toEqual({ batchItemFailures: [{ itemIdentifier: "5" }] });
    expect(purged).toEqual(["first"]);
    expect(log).toContainEqual(expect.objectContaining({ level: "error", event: "retention", runId: "broken" }));
  });
});
