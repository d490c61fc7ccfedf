/**
 * The AWS runtime's measurements, one function each, on the e2e harness (DynamoDB Local, the SQS
 * emulator, the real Lambda handler; Scheduler is the stand-in, unused by these short runs).
 */
import type { Server } from "node:http";
import { PutItemCommand } from "@aws-sdk/client-dynamodb";
import { createSqsServer } from "local-aws-sqs";
import { z } from "zod";
import { recordItem } from "../lib/aws/dynamodb-codec.ts";
import { formatWakeMessage } from "../lib/aws/wake-message.ts";
import { JOURNAL_VERSION } from "../lib/core/records.ts";
import { durable } from "../lib/index.ts";
import { lambdaContext } from "../test/aws-e2e/event-source.ts";
import type { E2e } from "../test/aws-e2e/harness.ts";
import { LOCAL_REGION } from "../test/setup/local-aws.ts";
import { timed } from "./stats.ts";

/** `steps` trivial sequential steps (`s`, `s#2`, …): what the per-step figures are about. */
export const awsSteps = durable({ name: "bench-aws-steps", input: z.object({ steps: z.number().int().positive() }) }, async ({ steps }, step) => {
  let last = 0;
  for (let i = 0; i < steps; i++) last = await step.run("s", () => i);
  return last;
});

let nextId = 0;
const runId = (prefix: string) => `${prefix}-${++nextId}`;

/** DynamoDB requests by operation, counted by a middleware on the runtime's client. */
export class RequestCounter {
  private counts = new Map<string, number>();

  constructor(e2e: E2e) {
    e2e.clients.dynamodb.middlewareStack.add(
      (next, context) => async (args) => {
        const op = String(context.commandName ?? "?").replace(/Command$/, "");
        this.counts.set(op, (this.counts.get(op) ?? 0) + 1);
        return next(args);
      },
      { step: "initialize", name: "countRequests" },
    );
  }

  /** The requests `fn` made, by operation. */
  async around(fn: () => Promise<unknown>): Promise<Map<string, number>> {
    this.counts = new Map();
    await fn();
    return this.counts;
  }
}

/** A fresh run of `steps` steps, created in the journal, and the SQS event that wakes it. */
export async function prepareRun(e2e: E2e, steps: number): Promise<{ runId: string; event: unknown }> {
  const id = runId(`steps${steps}`);
  await e2e.store.createRun({ runId: id, workflow: awsSteps.name, input: { steps }, createdAt: e2e.clock.now() });
  const body = formatWakeMessage({ runId: id, reason: "start", key: "start", at: e2e.clock.now() });
  return { runId: id, event: { Records: [{ messageId: id, body, eventSource: "aws:sqs", attributes: { ApproximateReceiveCount: "1" } }] } };
}

/** One invocation of the real handler with the run's wake; it must complete the run. Returns its ms. */
export async function invokeRun(e2e: E2e, run: { runId: string; event: unknown }): Promise<number> {
  const ms = await timed(() => e2e.handler(run.event, lambdaContext(900_000)));
  const meta = await e2e.store.getRun(run.runId);
  if (meta?.status !== "completed") throw new Error(`run ${run.runId} ended ${meta?.status}`);
  return ms;
}

/**
 * One repetition of the per-step figure, interleaved so that both halves see the same machine:
 * raw PutItems, a short run, a long run. Per step = (long - short) / extra steps.
 */
export async function perStepRound(e2e: E2e, short: number, long: number): Promise<{ stepMs: number; putMs: number }> {
  const putMs = await rawPuts(e2e, long - short);
  const [a, b] = [await prepareRun(e2e, short), await prepareRun(e2e, long)];
  const shortMs = await invokeRun(e2e, a);
  const longMs = await invokeRun(e2e, b);
  return { stepMs: (longMs - shortMs) / (long - short), putMs };
}

/** `n` sequential raw conditional PutItems of step-record-shaped items (the store's own put); ms per put. */
export async function rawPuts(e2e: E2e, n: number): Promise<number> {
  const id = runId("raw");
  const items = Array.from({ length: n }, (_, i) => {
    const stepId = i === 0 ? "s" : `s#${i + 1}`;
    const now = Date.now();
    const body = { type: "step", kind: "run", stepId, status: "ok", result: i, attempts: 1, startedAt: now, v: JOURNAL_VERSION, at: now };
    return recordItem(id, { key: `step#${stepId}`, body }, now * 1000 + i);
  });
  const ms = await timed(async () => {
    for (const Item of items) {
      await e2e.clients.dynamodb.send(
        new PutItemCommand({ TableName: e2e.tableName, Item, ConditionExpression: "attribute_not_exists(pk)", ReturnValuesOnConditionCheckFailure: "ALL_OLD" }),
      );
    }
  });
  return ms / n;
}

/**
 * `runs` runs of `steps` steps started at once (client.start: the run, then its start wake on
 * the queue), consumed by the event source loop with `pollers` concurrent pollers, batches of
 * 10. Returns the seconds from the first start to the last completion.
 */
export async function concurrentBatch(e2e: E2e, runs: number, steps: number, pollers: number): Promise<{ seconds: number; completed: number }> {
  const ids = Array.from({ length: runs }, () => runId("batch"));
  const pending = new Set(ids);
  const began = performance.now();
  await Promise.all(ids.map((id) => e2e.client.start(awsSteps, { runId: id, input: { steps } })));
  // Completion is read from the runtime's own log lines, so the loop's check costs no requests.
  let seen = e2e.logs.length;
  const done = () => {
    for (; seen < e2e.logs.length; seen++) {
      const line = e2e.logs[seen];
      if (line?.event === "wake" && line.outcome === "completed") pending.delete(line.runId);
    }
    return pending.size === 0;
  };
  await e2e.mapping().runUntil(done, { pollers, deadlineMs: 120_000, what: `${runs} runs to complete` });
  const seconds = (performance.now() - began) / 1000;
  const finished = await Promise.all(ids.map((id) => e2e.store.getRun(id)));
  return { seconds, completed: finished.filter((r) => r?.status === "completed").length };
}

/** The SQS emulator on a free port, in this process. */
export async function startSqs(): Promise<{ endpoint: string; stop: () => Promise<void> }> {
  const server: Server = await createSqsServer({ port: 0, hostname: "127.0.0.1", region: LOCAL_REGION, emulateQueueCreationLifecycle: false });
  const address = server.address();
  if (typeof address !== "object" || address === null) throw new Error("the SQS emulator did not report its port");
  const stop = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return { endpoint: `http://127.0.0.1:${address.port}`, stop };
}
