/**
 * The fan-out of 1,000 child runs on the AWS runtime (issue 11), beside compose.ts's local-runtime
 * figure and built the same way: a parent that `step.invoke`s 1,000 one-step children at once
 * (`Promise.all`) and awaits them all, in the same deployment. The e2e harness runs it: the real
 * Lambda handler, fed by the event-source loop over the SQS emulator, journaled in DynamoDB
 * Local. The loop mirrors the construct's defaults: batches of 10, 10 concurrent invocations
 * (`maxConcurrency`), a 1-minute function timeout and a visibility timeout of 6 x that.
 *
 * Counted by SDK middlewares on the harness's clients (the handler, the client and the loop share
 * them): DynamoDB requests by operation, and messages sent to the wake queue by reason. Beside it,
 * the emulator's own floor: raw PutItems, as many in flight as the SDK's sockets allow (50).
 * Called by compose.ts with the DynamoDB Local it started.
 */
import { PutItemCommand } from "@aws-sdk/client-dynamodb";
import { z } from "zod";
import { recordItem } from "../lib/aws/dynamodb-codec.ts";
import { parseWakeMessage } from "../lib/aws/wake-message.ts";
import { JOURNAL_VERSION } from "../lib/core/records.ts";
import { durable } from "../lib/index.ts";
import { type E2e, createE2e } from "../test/aws-e2e/harness.ts";
import { RequestCounter, startSqs } from "./aws-scenarios.ts";
import { fmt, summarise, timed } from "./stats.ts";

const RUNS = 3;
const POLLERS = 10;
const FUNCTION_TIMEOUT_MS = 60_000;
const FLOOR_PUTS = 3_000;

const child = durable({ name: "bench-child", input: z.object({ i: z.number() }) }, async ({ i }, step) => step.run("work", () => i));
const parent = durable({ name: "bench-parent", input: z.object({ n: z.number() }) }, async ({ n }, step) => {
  const results = await Promise.all(Array.from({ length: n }, (_, i) => step.invoke("child", child, { input: { i } })));
  return results.length;
});

type Counts = Map<string, number>;
const add = (into: Counts, key: string, by = 1) => into.set(key, (into.get(key) ?? 0) + by);
const total = (m: Counts) => [...m.values()].reduce((a, b) => a + b, 0);
/** "PutItem 7.00, UpdateItem 3.11": counts divided by `n`, largest first (whole numbers when n = 1). */
const per = (m: Counts, n: number) => [...m].sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${n === 1 ? v : (v / n).toFixed(2)}`).join(", ");

interface FanOut {
  ms: number;
  dynamo: Counts;
  sqs: Counts;
  sent: Counts;
  parentWakes: Counts;
  invocations: number;
  firstParentMs: number;
}

/** One fan-out on a fresh table and queue. */
async function fanOut(endpoints: { dynamodb: string; sqs: string }, n: number, runIndex: number): Promise<FanOut> {
  const e2e = await createE2e({ endpoints, workflows: () => [parent, child], visibilityTimeoutS: (FUNCTION_TIMEOUT_MS / 1000) * 6 });
  try {
    const dynamo = new RequestCounter(e2e);
    const sqs: Counts = new Map();
    e2e.clients.sqs.middlewareStack.add((next, context) => async (args) => (add(sqs, String(context.commandName ?? "?").replace(/Command$/, "")), next(args)), {
      step: "initialize",
      name: "countSqsRequests",
    });
    const runId = `fan-${runIndex}`;
    const loop = e2e.mapping({ functionTimeoutMs: FUNCTION_TIMEOUT_MS });
    // Completion is read from the runtime's log lines, so waiting costs no requests.
    const done = () => e2e.logs.some((l) => l.event === "wake" && l.runId === runId && l.outcome === "completed");
    let ms = 0;
    const requests = await dynamo.around(async () => {
      ms = await timed(async () => {
        await e2e.client.start(parent, { runId, input: { n } });
        await loop.runUntil(done, { pollers: POLLERS, deadlineMs: 900_000, what: `the parent of ${n} children to complete` });
      });
    });
    const meta = await e2e.store.getRun(runId);
    if (meta?.status !== "completed" || meta.result !== n) throw new Error(`parent ended ${meta?.status} with ${JSON.stringify(meta?.result)}`);
    const sent: Counts = new Map();
    for (const m of e2e.sent) add(sent, parseWakeMessage(m.body).reason);
    const parentWakes: Counts = new Map();
    for (const l of e2e.lines("wake", runId)) add(parentWakes, String(l.outcome));
    const first = e2e.lines("wake", runId).find((l) => l.outcome !== "duplicate-in-batch" && l.outcome !== "busy");
    return { ms, dynamo: requests, sqs, sent, parentWakes, invocations: loop.invocations.length, firstParentMs: Number(first?.durationMs ?? NaN) };
  } finally {
    e2e.close();
  }
}

/** Raw conditional PutItems of step-record-shaped items, 50 in flight (the SDK's sockets): requests/s. */
async function emulatorFloor(endpoints: { dynamodb: string; sqs: string }): Promise<number> {
  const e2e: E2e = await createE2e({ endpoints, workflows: () => [parent, child] });
  try {
    const now = Date.now();
    const items = Array.from({ length: FLOOR_PUTS }, (_, i) => {
      const body = { type: "step", kind: "run", stepId: `s#${i + 1}`, status: "ok", result: i, attempts: 1, startedAt: now, v: JOURNAL_VERSION, at: now };
      return recordItem(`floor-${i % 100}`, { key: `step#s#${i + 1}`, body }, now * 1000 + i);
    });
    const send = (Item: (typeof items)[number]) =>
      e2e.clients.dynamodb.send(new PutItemCommand({ TableName: e2e.tableName, Item, ConditionExpression: "attribute_not_exists(pk)", ReturnValuesOnConditionCheckFailure: "ALL_OLD" }));
    let next = 0;
    const worker = async () => {
      while (next < items.length) await send(items[next++]!);
    };
    const ms = await timed(() => Promise.all(Array.from({ length: 50 }, worker)));
    return FLOOR_PUTS / (ms / 1000);
  } finally {
    e2e.close();
  }
}

/** The fan-out `RUNS` times (after no warm-up: compose.ts's DynamoDB figures ran first); a table row in compose.ts's columns and lines of detail. */
export async function childrenOnAws(dynamodbEndpoint: string, n: number): Promise<{ row: string[]; detail: string[] }> {
  const sqsPeer = await startSqs();
  try {
    const endpoints = { dynamodb: dynamodbEndpoint, sqs: sqsPeer.endpoint };
    const runs: FanOut[] = [];
    for (let i = 0; i < RUNS; i++) runs.push(await fanOut(endpoints, n, i));
    const floor = await emulatorFloor(endpoints);
    const sum = (pick: (r: FanOut) => Counts) => runs.reduce((into, r) => ([...pick(r)].forEach(([k, v]) => add(into, k, v)), into), new Map<string, number>());
    const [dynamo, sqs, sent, parentWakes] = [sum((r) => r.dynamo), sum((r) => r.sqs), sum((r) => r.sent), sum((r) => r.parentWakes)];
    const children = n * RUNS;
    const s = summarise(runs.map((r) => r.ms));
    const first = summarise(runs.map((r) => r.firstParentMs));
    const rate = summarise(runs.map((r) => total(r.dynamo) / (r.ms / 1000)));
    const row = ["DynamoDB Local + SQS (Lambda handler)", `${n.toLocaleString("en")} child runs (step.invoke)`, fmt(s.median), fmt(s.min), `${(total(dynamo) / children).toFixed(2)} DynamoDB req/child`];
    const detail = [
      `AWS runtime, ${RUNS} runs (fresh table and queue each), ${POLLERS} concurrent invocations, batches of up to 10; per child, averaged over the runs:`,
      `  DynamoDB requests ${(total(dynamo) / children).toFixed(2)}: ${per(dynamo, children)} (the parent's own included)`,
      `  SQS messages sent ${(total(sent) / children).toFixed(2)}: ${per(sent, children)}; SQS requests, the loop's receives and deletes included: ${per(sqs, children)}`,
      `  handler invocations per run ${fmt(summarise(runs.map((r) => r.invocations)).median)} (median); the parent's wakes over ${RUNS} runs: ${per(parentWakes, 1)}`,
      `  the parent's first invocation (it starts the ${n.toLocaleString("en")} children): median ${fmt(first.median)} ms of the ${fmt(s.median)} ms`,
      `  DynamoDB requests/s during the fan-out: median ${fmt(rate.median)}; the emulator's floor, ${FLOOR_PUTS.toLocaleString("en")} raw PutItems, 50 in flight: ${fmt(floor)}/s`,
      `  (an SDK "socket usage at capacity=50" warning above, if any, is that invocation: its ${n.toLocaleString("en")} child starts queue behind the client's 50 sockets)`,
    ];
    return { row, detail };
  } finally {
    await sqsPeer.stop();
  }
}
