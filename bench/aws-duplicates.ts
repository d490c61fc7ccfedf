/**
 * DynamoDB requests under duplicate delivery (issue 19): the real Lambda handler on DynamoDB Local
 * and the SQS emulator, every wake delivered 2–3 times, requests counted by an SDK middleware.
 *
 * Two workloads, each pass RUNS runs of 5 steps started through the client (`client.start`):
 * plain runs (one wake each), and the same with every other run sleeping 20 s after its second
 * step (a suspension and a second wake; SQS delays are real on the emulator, so a pass takes
 * that long). A poll loop takes batches off the real wake queue and
 * hands each message to the handler, plus its copies by a fixed pattern (half the run's index,
 * so that the sleeping runs get every pattern too, plus the wake's number within the run, mod 4):
 *
 *   0: 2 deliveries   the original, and a copy at the same moment in another container's batch
 *   1: 3 deliveries   the original, a concurrent copy, and a copy after the original was handled
 *   2: 2 deliveries   the original, and a copy after it was handled
 *   3: 3 deliveries   as 1
 *
 * (2.5 deliveries per wake.) A copy "after" goes to the handler once the original's batch has
 * answered: a redelivery, found by a run that is suspended or has ended. It goes to the container
 * that handled the original, which remembers the message (the best case); with `elsewhere` as the
 * second argument, to a fresh container each batch instead (the worst case: a fleet where a copy
 * never meets the container that handled it). Each pass is paired with
 * a pass that delivers every wake once, interleaved, so the cost of the duplicates alone is the
 * difference. Every request is attributed (AsyncLocalStorage) to the start, the first delivery, a
 * concurrent copy or a later copy.
 *
 * Figures only, never assertions. Run: node --conditions=waymark-source --import tsx bench/aws-duplicates.ts [rounds] [elsewhere]
 */
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";

import { AsyncLocalStorage } from "node:async_hooks";
import { cpus } from "node:os";
import { DeleteMessageBatchCommand, ReceiveMessageCommand, type Message } from "@aws-sdk/client-sqs";
import { z } from "zod";
import { parseWakeMessage } from "../lib/aws/wake-message.ts";
import { durable } from "../lib/index.ts";
import { lambdaContext } from "../test/aws-e2e/event-source.ts";
import { type E2e, createE2e } from "../test/aws-e2e/harness.ts";
import { startDynamoDbLocal } from "../test/setup/dynamodb-local.ts";
import { startSqs } from "./aws-scenarios.ts";
import { summarise, table } from "./stats.ts";

const RUNS = 100;
const STEPS = 5;
const POLLERS = 2;
const ROUNDS = Number(process.argv[2] ?? 3);
/** Later copies to a fresh container each batch, not to the one that handled the original. */
const LATER_ELSEWHERE = process.argv[3] === "elsewhere";

type Tag = "start" | "first" | "concurrent" | "later";
type Counts = Map<string, number>;
const add = (into: Counts, key: string, by = 1) => into.set(key, (into.get(key) ?? 0) + by);
const total = (m: Counts) => [...m.values()].reduce((a, b) => a + b, 0);
const sum = (maps: Counts[]) => maps.reduce((all, m) => (m.forEach((v, k) => add(all, k, v)), all), new Map<string, number>());

/** Step bodies executed, by run (the figure's denominator). */
const executed = new Map<string, number>();
const flow = durable({ name: "bench-dup-flow", input: z.object({ nap: z.boolean() }) }, async ({ nap }, step) => {
  let last = 0;
  for (let i = 0; i < STEPS; i++) {
    last = await step.run("s", () => {
      executed.set(step.runId, (executed.get(step.runId) ?? 0) + 1);
      return i;
    });
    if (nap && i === 1) await step.sleep("nap", "20s");
  }
  return last;
});

interface Pass {
  byTag: Map<Tag, Counts>;
  bodies: number;
  wakes: number;
  copies: { concurrent: number; later: number };
  outcomes: Counts;
}

/** One pass of RUNS runs on `e2e`; `duplicates` false delivers every wake once. */
async function pass(e2e: E2e, tags: AsyncLocalStorage<Tag>, counts: Map<Tag, Counts>, prefix: string, duplicates: boolean, naps: boolean): Promise<Pass> {
  for (const tag of ["start", "first", "concurrent", "later"] as const) counts.set(tag, new Map());
  const ids = Array.from({ length: RUNS }, (_, i) => `${prefix}-${i}`);
  const pending = new Set(ids);
  const wakesOf = new Map<string, number>();
  const copies = { concurrent: 0, later: 0 };
  let wakes = 0;
  const logFrom = e2e.logs.length;
  const other = e2e.newHandler(); // a second container: the concurrent copies' batches
  await tags.run("start", () => Promise.all(ids.map((runId, i) => e2e.client.start(flow, { runId, input: { nap: naps && i % 2 === 1 } }))));

  const done = () => {
    for (const line of e2e.logs.slice(logFrom)) if (line.event === "wake" && line.outcome === "completed") pending.delete(line.runId);
    return pending.size === 0;
  };
  const deliver = (handler: typeof other, tag: Tag, ms: Message[]) =>
    ms.length === 0 ? Promise.resolve() : tags.run(tag, () => handler({ Records: ms.map(record) }, lambdaContext(60_000)));
  const poll = async (): Promise<void> => {
    const deadline = Date.now() + 120_000;
    while (!done()) {
      if (Date.now() > deadline) throw new Error(`${pending.size} runs unfinished`);
      const out = await e2e.clients.sqs.send(new ReceiveMessageCommand({ QueueUrl: e2e.queues.queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0, AttributeNames: ["All"] }));
      const batch = out.Messages ?? [];
      if (batch.length === 0) {
        await new Promise((r) => setTimeout(r, 20));
        continue;
      }
      wakes += batch.length;
      const concurrent: Message[] = [];
      const later: Message[] = [];
      for (const m of batch) {
        const runId = parseWakeMessage(m.Body ?? "").runId;
        const n = wakesOf.get(runId) ?? 0;
        wakesOf.set(runId, n + 1);
        if (!duplicates) continue;
        const pattern = (Math.floor(Number(runId.split("-").pop()) / 2) + n) % 4;
        if (pattern !== 2) concurrent.push(m);
        if (pattern !== 0) later.push(m);
      }
      copies.concurrent += concurrent.length;
      copies.later += later.length;
      await Promise.all([deliver(e2e.handler, "first", batch), deliver(other, "concurrent", concurrent)]);
      await deliver(LATER_ELSEWHERE && later.length > 0 ? e2e.newHandler() : e2e.handler, "later", later);
      await e2e.clients.sqs.send(new DeleteMessageBatchCommand({ QueueUrl: e2e.queues.queueUrl, Entries: batch.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle })) }));
    }
  };
  await Promise.all(Array.from({ length: POLLERS }, poll));
  const outcomes: Counts = new Map();
  for (const line of e2e.logs.slice(logFrom)) if (line.event === "wake") add(outcomes, String(line.outcome));
  const bodies = ids.reduce((n, id) => n + (executed.get(id) ?? 0), 0);
  return { byTag: new Map([...counts].map(([k, v]) => [k, new Map(v)])), bodies, wakes, copies, outcomes };
}

function record(m: Message) {
  return { messageId: m.MessageId ?? "", body: m.Body ?? "", eventSource: "aws:sqs", attributes: { ApproximateReceiveCount: m.Attributes?.ApproximateReceiveCount ?? "1" } };
}

const fmtCounts = (m: Counts, n: number) => [...m].filter(([, v]) => v !== 0).sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${(v / n).toFixed(2)}`).join(", ");

/** The figures of one workload: its passes with duplicates and without, round by round. */
function report(name: string, dup: Pass[], once: Pass[]): void {
  const all = (p: Pass) => sum([...p.byTag.values()]);
  const med = (ps: Pass[], f: (p: Pass) => number) => summarise(ps.map(f)).median;
  const tagged = (p: Pass, tag: Tag) => p.byTag.get(tag) ?? new Map<string, number>();
  const copiesOf = (p: Pass) => p.copies.concurrent + p.copies.later;
  const rows: string[][] = [];
  rows.push(["requests per executed step, 2–3x delivery", med(dup, (p) => total(all(p)) / p.bodies).toFixed(3), fmtCounts(all(dup[0]!), dup[0]!.bodies)]);
  rows.push(["requests per executed step, each wake once", med(once, (p) => total(all(p)) / p.bodies).toFixed(3), fmtCounts(all(once[0]!), once[0]!.bodies)]);
  rows.push(["requests per run, 2–3x / once", `${med(dup, (p) => total(all(p)) / RUNS).toFixed(2)} / ${med(once, (p) => total(all(p)) / RUNS).toFixed(2)}`, ""]);
  rows.push(["requests per start (client.start)", med(dup, (p) => total(tagged(p, "start")) / RUNS).toFixed(2), fmtCounts(tagged(dup[0]!, "start"), RUNS)]);
  rows.push(["requests per duplicate wake (2–3x pass − once pass)", summarise(dup.map((p, i) => (total(all(p)) - total(all(once[i]!))) / copiesOf(p))).median.toFixed(2), ""]);
  for (const tag of ["concurrent", "later"] as const) {
    const n = (p: Pass) => p.copies[tag];
    rows.push([`   a ${tag} copy's own invocation`, med(dup, (p) => total(tagged(p, tag)) / n(p)).toFixed(2), fmtCounts(tagged(dup[0]!, tag), n(dup[0]!))]);
  }
  rows.push(["   first deliveries, per wake, 2–3x / once", `${med(dup, (p) => total(tagged(p, "first")) / p.wakes).toFixed(2)} / ${med(once, (p) => total(tagged(p, "first")) / p.wakes).toFixed(2)}`, ""]);
  rows.push(["wakes per run (messages on the queue), 2–3x / once", `${med(dup, (p) => p.wakes / RUNS).toFixed(2)} / ${med(once, (p) => p.wakes / RUNS).toFixed(2)}`, `copies per wake ${med(dup, (p) => copiesOf(p) / p.wakes).toFixed(2)}`]);
  rows.push(["step bodies per run, 2–3x / once", `${med(dup, (p) => p.bodies / RUNS).toFixed(2)} / ${med(once, (p) => p.bodies / RUNS).toFixed(2)}`, ""]);
  console.log(`\n${name}: ${RUNS} runs a pass, ${dup.length} rounds`);
  console.log(table(["measurement (medians of rounds)", "value", "by operation (first round)"], rows));
  console.log(`wake outcomes (first round): 2–3x ${fmtCounts(dup[0]!.outcomes, 1)}; once ${fmtCounts(once[0]!.outcomes, 1)}`);
  console.log(`per round, requests per executed step: 2–3x ${dup.map((p) => (total(all(p)) / p.bodies).toFixed(3)).join(", ")}; once ${once.map((p) => (total(all(p)) / p.bodies).toFixed(3)).join(", ")}`);
}

async function main(): Promise<void> {
  console.log("Waymark AWS bench: DynamoDB requests under 2–3x duplicate delivery (real handler, DynamoDB Local, SQS emulator)");
  console.log(`node ${process.version}, ${cpus()[0]?.model ?? "unknown CPU"} x${cpus().length}; ${ROUNDS} rounds, each a pass with every wake once and a pass with 2–3 deliveries`);
  console.log(LATER_ELSEWHERE ? "later copies: to a fresh container each batch (worst case)" : "later copies: to the container that handled the original (best case; `elsewhere` for the worst)");
  const [dynamodb, sqs] = await Promise.all([startDynamoDbLocal(), startSqs()]);
  try {
    const e2e = await createE2e({ endpoints: { dynamodb: dynamodb.endpoint, sqs: sqs.endpoint }, workflows: () => [flow], config: { leaseTtlMs: 60_000 } });
    try {
      const tags = new AsyncLocalStorage<Tag>();
      const counts = new Map<Tag, Counts>();
      e2e.clients.dynamodb.middlewareStack.add(
        (next, context) => async (args) => {
          const tag = tags.getStore();
          if (tag) add(counts.get(tag) ?? new Map(), String(context.commandName ?? "?").replace(/Command$/, ""));
          return next(args);
        },
        { step: "initialize", name: "countByTag" },
      );
      const workloads = [
        { name: "5 steps", naps: false },
        { name: "5 steps, every other run sleeping 20 s after its second", naps: true },
      ];
      const passes = workloads.map(() => ({ dup: [] as Pass[], once: [] as Pass[] }));
      for (const [w, { naps }] of workloads.entries()) await pass(e2e, tags, counts, `warm${w}`, true, naps);
      for (let r = 0; r < ROUNDS; r++) {
        for (const [w, { naps }] of workloads.entries()) {
          passes[w]!.once.push(await pass(e2e, tags, counts, `once${w}-${r}`, false, naps));
          passes[w]!.dup.push(await pass(e2e, tags, counts, `dup${w}-${r}`, true, naps));
        }
      }
      for (const [w, { name }] of workloads.entries()) report(name, passes[w]!.dup, passes[w]!.once);
    } finally {
      e2e.close();
    }
  } finally {
    await Promise.all([dynamodb.stop(), sqs.stop()]);
  }
}

await main();
