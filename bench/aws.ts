/**
 * The AWS runtime's figures, against DynamoDB Local and the SQS emulator (both started here):
 *
 *   1. DynamoDB requests per completed step (counted by an SDK middleware; target exactly 1)
 *   2. time per completed step through the real Lambda handler, as a multiple of one raw
 *      conditional PutItem round trip measured in the same run (target <= 1.2x)
 *   3. a 200-run concurrent batch through the SQS emulator, the event source loop and the handler
 *
 * The Lambda bundles, their import time and the first wake of a fresh process: cold-start.ts.
 *
 * Figures only, never assertions. Run: node --conditions=waymark-source --import tsx bench/aws.ts
 */
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";

import { cpus } from "node:os";
import { createE2e } from "../test/aws-e2e/harness.ts";
import { startDynamoDbLocal } from "../test/setup/dynamodb-local.ts";
import { RequestCounter, awsSteps, concurrentBatch, invokeRun, perStepRound, prepareRun, startSqs } from "./aws-scenarios.ts";
import { fmt, repeat, summarise, table } from "./stats.ts";

/** Rounds of the per-step figure (each interleaves raw puts and both runs, ~1 s). */
const ROUNDS = { runs: 11, warmup: 2 };
/** Per-step figures are the difference between a long and a short run, so fixed costs cancel. */
const SHORT = 10;
const LONG = 210;
const BATCH = { runs: 200, steps: 5, pollers: 4, reps: 3 };

async function main(): Promise<void> {
  console.log("Waymark AWS bench: the real Lambda handler on DynamoDB Local (in memory) and the SQS emulator");
  console.log(`node ${process.version}, ${cpus()[0]?.model ?? "unknown CPU"} x${cpus().length}, ${process.platform}/${process.arch}`);
  console.log("Note: shared, noisy machine; both emulators run on it too. Medians of several runs; trust ratios more than absolutes.\n");
  const [dynamodb, sqs] = await Promise.all([startDynamoDbLocal(), startSqs()]);
  const rows: string[][] = [];
  try {
    const e2e = await createE2e({ endpoints: { dynamodb: dynamodb.endpoint, sqs: sqs.endpoint }, workflows: () => [awsSteps], config: { leaseTtlMs: 60_000 } });
    try {
      // 1. Requests made by the handler's invocation: a LONG-step run minus a SHORT-step run, per extra step.
      const counter = new RequestCounter(e2e);
      await invokeRun(e2e, await prepareRun(e2e, SHORT)); // warm-up
      const [s, l] = [await prepareRun(e2e, SHORT), await prepareRun(e2e, LONG)];
      const short = await counter.around(() => invokeRun(e2e, s));
      const long = await counter.around(() => invokeRun(e2e, l));
      const ops = [...new Set([...short.keys(), ...long.keys()])].sort();
      const perStep = ops.map((op) => `${op} ${((long.get(op) ?? 0) - (short.get(op) ?? 0)) / (LONG - SHORT)}`).filter((x) => !x.endsWith(" 0"));
      const total = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);
      const requestsPerStep = (total(long) - total(short)) / (LONG - SHORT);
      // The target is one write per step. A run also looks for a cancellation (one GetItem beside
      // an append) once 250 ms have passed since it last looked (AWS_CANCEL_PROBE_MS): a run that
      // takes longer than that here pays a read now and then, counted but not a write.
      const writesPerStep = ((long.get("PutItem") ?? 0) - (short.get("PutItem") ?? 0)) / (LONG - SHORT);
      const onlyProbes = ops.every((op) => op === "PutItem" || op === "GetItem" || (long.get(op) ?? 0) === (short.get(op) ?? 0));
      rows.push(["1. DynamoDB requests per completed step", "requests", String(requestsPerStep), `${perStep.join(", ")} (a GetItem: the 250 ms cancellation look)`, "1 PutItem", writesPerStep === 1 && onlyProbes ? "met" : "MISSED"]);
      // The run's meta read after the invocation (getRun) is the bench's, not the handler's.
      short.set("GetItem", (short.get("GetItem") ?? 0) - 1);
      rows.push([`   one invocation running a ${SHORT}-step run, in all`, "requests", String(total(short)), ops.map((op) => `${op} ${short.get(op) ?? 0}`).filter((x) => !x.endsWith(" 0")).join(", "), "", ""]);
      const start = await counter.around(() => e2e.client.start(awsSteps, { runId: `start-${Date.now()}`, input: { steps: 1 } }));
      rows.push(["   starting a run (client.start: run + start wake)", "requests", String(total(start)), [...start].map(([op, n]) => `${op} ${n}`).join(", "), "", ""]);

      // 2. Time per step (marginal) against one raw PutItem, same table and client, interleaved.
      const rounds: Array<{ stepMs: number; putMs: number }> = [];
      for (let i = 0; i < ROUNDS.warmup + ROUNDS.runs; i++) {
        const round = await perStepRound(e2e, SHORT, LONG);
        if (i >= ROUNDS.warmup) rounds.push(round);
      }
      const step = summarise(rounds.map((r) => r.stepMs));
      const put = summarise(rounds.map((r) => r.putMs));
      const ratio = summarise(rounds.map((r) => r.stepMs / r.putMs));
      rows.push(["2. per completed step, through the handler", "ms/step", fmt(step.median), `min ${fmt(step.min)}, max ${fmt(step.max)}`, "", ""]);
      rows.push(["   raw conditional PutItem round trip", "ms/put", fmt(put.median), `min ${fmt(put.min)}, max ${fmt(put.max)}`, "", ""]);
      rows.push(["   per step / raw PutItem (median of per-round ratios)", "x", ratio.median.toFixed(2), `min ${ratio.min.toFixed(2)}, max ${ratio.max.toFixed(2)}`, "<= 1.2", ratio.median <= 1.2 ? "met" : "MISSED"]);

      // 3. Many runs at once through the queue.
      const batches: number[] = [];
      let allComplete = true;
      for (let i = 0; i < BATCH.reps; i++) {
        const b = await concurrentBatch(e2e, BATCH.runs, BATCH.steps, BATCH.pollers);
        batches.push(BATCH.runs / b.seconds);
        allComplete &&= b.completed === BATCH.runs;
      }
      const rate = summarise(batches);
      rows.push([
        `3. ${BATCH.runs} runs x ${BATCH.steps} steps at once, ${BATCH.pollers} pollers, batches of 10`,
        "runs/s",
        fmt(rate.median),
        `min ${fmt(rate.min)}, max ${fmt(rate.max)} (${BATCH.reps} batches)`,
        "all complete",
        allComplete ? "met" : "MISSED",
      ]);
    } finally {
      e2e.close();
    }
  } finally {
    await Promise.all([dynamodb.stop(), sqs.stop()]);
  }

  console.log(table(["measurement", "unit", "median", "detail", "target", ""], rows));
}

await main();
