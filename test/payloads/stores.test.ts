/**
 * Payloads by reference on every journal store, each with its real payload store: DynamoDB Local
 * with S3 (s3rver), a SQLite file with the directory beside it. A value over DynamoDB's 400 KB
 * item limit (which the journal alone refuses: test/hardening/value-limits.test.ts) now completes,
 * and a new engine on the same journal replays it from the payload store.
 */
import { existsSync, readdirSync } from "node:fs";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { Client, createRegistry, durable, Engine, type PayloadOptions } from "waymark";
import { MemoryWakeQueue, VirtualClock } from "waymark/testing";
import { DynamoJournalStore } from "../../lib/aws/dynamodb-store.ts";
import { S3PayloadStore } from "../../lib/aws/s3-payloads.ts";
import { DirPayloadStore, payloadDirFor } from "../../lib/local/dir-payloads.ts";
import { createLocalRuntime } from "../../lib/local/runtime.ts";
import { localDynamoClient, localS3Client } from "../setup/clients.ts";
import { PAYLOAD_BUCKET } from "../setup/s3-peer.ts";
import { createJournalTable, deleteTable } from "../setup/tables.ts";
import { type SqliteLab, sqliteLab } from "../support/sqlite-lab.ts";

const MiB = 1024 * 1024;
const Doc = z.object({ doc: z.string() });
const exportFlow = durable({ name: "export", input: Doc, signals: { annotate: z.object({ note: z.string() }) } }, async ({ doc }, step) => {
  const blob = await step.run("render", () => doc.repeat(4));
  const got = await step.waitForSignal("annotate");
  const note = got.received ? got.payload.note : "";
  return { blob: blob.length, note: note.length, tail: `${blob.slice(-2)}${note.slice(-2)}` };
});

/** Runs the flow with big values everywhere through two engines (the second replays all of it). */
async function roundTrip(client: Client, engine: () => Engine, runId: string): Promise<unknown> {
  await client.start(exportFlow, { runId, input: { doc: "a".repeat(MiB / 4 - 1) + "b" } }); // 256 KiB input
  expect(await engine().invoke(runId)).toMatchObject({ status: "suspended" });
  await client.signal(runId, "annotate", { note: "n".repeat(600 * 1024) + "!" });
  return engine().invoke(runId);
}

describe("DynamoDB Local + S3 on s3rver", () => {
  const dynamo = localDynamoClient();
  const s3 = localS3Client();
  let tableName = "";
  afterAll(async () => {
    if (tableName) await deleteTable(dynamo, tableName);
    dynamo.destroy();
    s3.destroy();
  });

  it("a 1 MiB step result, a 256 KiB input and a 600 KiB signal go by reference; the second engine replays them", async () => {
    tableName = await createJournalTable(dynamo, "payloads");
    const store = new DynamoJournalStore({ client: dynamo, tableName });
    const payloads: PayloadOptions = { store: new S3PayloadStore({ bucket: PAYLOAD_BUCKET, client: s3 }) };
    const ports = { store, wakes: new MemoryWakeQueue(), clock: new VirtualClock(), workflows: createRegistry([exportFlow]), payloads };
    let n = 0;
    const result = await roundTrip(new Client(ports), () => new Engine({ ...ports, owner: `w${++n}` }), "ddb-1");
    expect(result).toEqual({ status: "completed", result: { blob: MiB, note: 600 * 1024 + 1, tail: "abn!" } });
    const meta = await store.getRun("ddb-1");
    expect(meta?.input).toHaveProperty("$waymarkPayload");
    const read = await new Client(ports).get("ddb-1");
    expect(read.input).toEqual({ doc: expect.stringMatching(/ab$/) });
  });
});

describe("SQLite + a directory beside the journal file", () => {
  let lab: SqliteLab | undefined;
  afterEach(() => lab?.close());

  it("the objects are files beside the journal; a new engine on the same file replays them", async () => {
    lab = sqliteLab([exportFlow]);
    const dir = payloadDirFor(lab.file);
    const payloads: PayloadOptions = { store: new DirPayloadStore(dir) };
    const client = new Client({ store: lab.store, wakes: lab.wakes, clock: lab.clock, workflows: lab.workflows, payloads });
    let n = 0;
    const l = lab;
    const result = await roundTrip(client, () => l.engine(`w${++n}`, l.store, { payloads }), "sq-1");
    expect(result).toMatchObject({ status: "completed", result: { blob: MiB, tail: "abn!" } });
    const createdAt = (await lab.store.getRun("sq-1"))?.createdAt;
    // input, step result, signal payload: three objects of this incarnation (the small run result stays inline).
    expect(readdirSync(`${dir}/runs/sq-1/${createdAt}`)).toHaveLength(3);
  });

  it("the local runtime keeps them in <file>.payloads/ with payloads: true, and waitForRun reads the result back", async () => {
    lab = sqliteLab([]);
    const big = durable({ name: "big", input: z.object({}) }, async (_in, step) => (await step.run("make", () => "z".repeat(300 * 1024))) + "!");
    const rt = createLocalRuntime({ workflows: [big], file: lab.file, payloads: true, pollIntervalMs: 5 });
    rt.start();
    try {
      await rt.client.start(big, { runId: "loc-1", input: {} });
      const run = await rt.waitForRun("loc-1");
      expect(run.result).toBe("z".repeat(300 * 1024) + "!");
      expect(existsSync(`${lab.file}.payloads/runs/loc-1`)).toBe(true);
    } finally {
      await rt.close();
    }
  });
});
