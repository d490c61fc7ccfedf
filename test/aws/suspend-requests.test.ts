/**
 * What one invocation that suspends costs on DynamoDB (issue 19): the release answers the run's
 * wake time, so nothing is read after it — no `GetItem` of the sleep's resolution or of the
 * cancellation, no `Query` of the journal. Requests are counted with middleware on the real
 * client (`initialize` sees each command once), on DynamoDB Local.
 */
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { Client, createRegistry, durable, Engine, type ReleaseResult, type SuspendUpdate, type Wake } from "waymark";
import { MemoryWakeQueue, VirtualClock } from "waymark/testing";
import { DynamoJournalStore } from "../../lib/aws/dynamodb-store.ts";
import { type CountedTable, countedTable } from "../support/counted-table.ts";

const napper = durable({ name: "requests-nap", input: z.object({}) }, async (_in, step) => {
  await step.run("one", () => 1);
  await step.run("two", () => 2);
  await step.sleep("nap", "20s");
  return step.run("three", () => 3);
});

/** The store, noting how many commands had been sent when its release answered. */
class NotingStore extends DynamoJournalStore {
  releasedAfter: number | undefined;
  answer: ReleaseResult | undefined;
  constructor(
    options: ConstructorParameters<typeof DynamoJournalStore>[0],
    private readonly sent: string[],
  ) {
    super(options);
  }
  override async releaseLease(runId: string, token: number, update: SuspendUpdate): Promise<ReleaseResult> {
    this.answer = await super.releaseLease(runId, token, update);
    this.releasedAfter = this.sent.length;
    return this.answer;
  }
}

let table: CountedTable;
let client: DynamoDBClient;
let tableName: string;
let commands: string[];

beforeAll(async () => {
  table = await countedTable("suspend-requests");
  ({ client, tableName, commands } = table);
});

afterAll(() => table.close());

describe("an invocation that runs two steps and suspends at a 20 s sleep, on DynamoDB Local", () => {
  it("reads nothing after its release: the release's answer is the run's wake time, the sleep's own", async () => {
    const store = new NotingStore({ client, tableName }, commands);
    const clock = new VirtualClock(Date.UTC(2026, 10, 30, 12));
    const wakes = new MemoryWakeQueue();
    const sent: Wake[] = [];
    const tracked = { schedule: async (w: Wake) => (sent.push(w), wakes.schedule(w)), cancel: (runId: string, key: string) => wakes.cancel(runId, key) };
    const ports = { store, wakes: tracked, clock, workflows: createRegistry([napper]) };
    await new Client(ports).start(napper, { runId: "nap-1", input: {} });

    commands.length = 0;
    sent.length = 0;
    const now = clock.now();
    expect(await new Engine({ ...ports, owner: "inv-1" }).invoke("nap-1")).toMatchObject({ status: "suspended", wakeAt: now + 20_000, waitingFor: "sleep:nap" });
    expect(store.answer).toEqual({ released: true, wakeAt: now + 20_000 });
    if (store.releasedAfter === undefined) throw new Error("never released");
    // The grant, two steps and the sleep's record, the release: then nothing. (No journal read:
    // the run's first grant said its journal was empty, first-invocation.test.ts.)
    expect(commands.at(store.releasedAfter - 1)).toBe("UpdateItem");
    expect(commands.slice(store.releasedAfter)).toEqual([]);
    expect(commands.filter((c) => c === "Query")).toHaveLength(0);
    expect(commands.filter((c) => c === "UpdateItem")).toHaveLength(2);
    expect(sent.filter((w) => w.runId === "nap-1").map((w) => [w.reason, w.at])).toEqual([["sleep", now + 20_000]]);
  });
});
