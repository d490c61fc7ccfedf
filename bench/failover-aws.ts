/**
 * A crashed Lambda's run, on the emulators: how long it waits to resume with the settings the
 * `DurableFunction` construct derives from its timeout (`failoverTimings`: lease TTL and the wake
 * queue's visibility timeout).
 *
 * A child process plays one warm Lambda container (test/aws-e2e/lambda-child.ts: the real
 * handler behind the event source loop, on DynamoDB Local and the SQS emulator, both started
 * here). It takes a batch of runs and is SIGKILLed at a random moment of the invocation, inside
 * step bodies. This process then plays the next container: per run, kill → its first step body
 * re-started here, beside the bound docs/guides/failover.md states (the visibility timeout).
 *
 * Figures only, never assertions. Run: node --conditions=waymark-source --import tsx bench/failover-aws.ts
 */
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";

import { spawn } from "node:child_process";
import { cpus } from "node:os";
import { fileURLToPath } from "node:url";
import { setTimeout as delay } from "node:timers/promises";
import { failoverTimings } from "../lib/aws/config.ts";
import { createE2e } from "../test/aws-e2e/harness.ts";
import type { ChildSpec } from "../test/aws-e2e/lambda-child.ts";
import { e2eWorkflows } from "../test/aws-e2e/workflows.ts";
import { startDynamoDbLocal } from "../test/setup/dynamodb-local.ts";
import { startSqs } from "./aws-scenarios.ts";
import { quantiles } from "./quantiles.ts";
import { fmt, table } from "./stats.ts";

/** The function timeout of the measurement (short, so that a sample takes its visibility timeout, ~21 s). */
const TIMEOUT_S = 3;
const KILLS = 5;
const RUNS_PER_KILL = 4;
const childScript = fileURLToPath(new URL("../test/aws-e2e/lambda-child.ts", import.meta.url));

async function main(): Promise<void> {
  const timings = failoverTimings(TIMEOUT_S);
  console.log("Waymark failover bench, AWS: a SIGKILLed child Lambda on DynamoDB Local and the SQS emulator");
  console.log(`node ${process.version}, ${cpus()[0]?.model ?? "unknown CPU"} x${cpus().length}, ${process.platform}/${process.arch}`);
  console.log(
    `function timeout ${TIMEOUT_S} s → lease TTL ${timings.leaseTtlMs / 1000} s, visibility ${timings.visibilityTimeoutSeconds} s (worst case to resume: ${timings.worstCaseResumeMs / 1000} s)\n`,
  );
  const [dynamodb, sqs] = await Promise.all([startDynamoDbLocal(), startSqs()]);
  const endpoints = { dynamodb: dynamodb.endpoint, sqs: sqs.endpoint };
  const resume: number[] = [];
  const sinceReceipt: number[] = [];
  const outcomes = new Map<string, number>();
  try {
    const e2e = await createE2e({
      endpoints,
      workflows: (ledger) => e2eWorkflows(ledger).all,
      visibilityTimeoutS: timings.visibilityTimeoutSeconds,
      maxReceiveCount: 10,
      config: { leaseTtlMs: timings.leaseTtlMs },
    });
    try {
      for (let k = 0; k < KILLS; k++) {
        // Eight 250 ms steps: one invocation finishes a run in ~2 s, inside the 3 s timeout, so the
        // kill always lands mid-invocation with the run's wake in flight (no checkpoint wake yet).
        const ids = Array.from({ length: RUNS_PER_KILL }, (_, i) => `crash-${k + 1}-${i + 1}`);
        for (const runId of ids) await e2e.client.start("steps-flow", { runId, input: { steps: 8, holdMs: 250 } });
        const spec: ChildSpec = { endpoints, queues: e2e.queues, config: e2e.config, ledgerFile: e2e.ledger.file, clockOffset: e2e.clock.offset, functionTimeoutMs: TIMEOUT_S * 1_000 };
        const child = spawn(process.execPath, ["--conditions=waymark-source", "--import", "tsx", childScript], { env: { ...process.env, WAYMARK_E2E_CHILD: JSON.stringify(spec) }, stdio: ["ignore", "pipe", "inherit"] });
        const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
        const mine = () => e2e.ledger.read().filter((x) => x.pid === child.pid && ids.some((id) => x.key.startsWith(`${id}/`)));
        // Every run's first body started in the child: all wakes received.
        const deadline = Date.now() + 60_000;
        while (new Set(mine().map((x) => x.key.split("/")[0])).size < ids.length) {
          if (Date.now() > deadline) throw new Error("bench: the child never started every run");
          await delay(5);
        }
        const firstBody = Math.min(...mine().map((x) => x.at));
        await delay(100 + Math.random() * 1_500);
        const killedAt = Date.now();
        child.kill("SIGKILL");
        await exited;
        await e2e.mapping({ functionTimeoutMs: TIMEOUT_S * 1_000 }).runUntil(e2e.finished(ids), { deadlineMs: 4 * timings.worstCaseResumeMs, what: "the crashed runs to finish here" });
        for (const id of ids) {
          const here = e2e.ledger.read().find((x) => x.pid === process.pid && x.key.startsWith(`${id}/`));
          if (here) resume.push(here.at - killedAt);
          if (here) sinceReceipt.push(here.at - firstBody);
        }
        for (const l of e2e.lines("wake").filter((l) => ids.includes(l.runId))) outcomes.set(`${String(l.outcome)} (receive ${String(l.receiveCount)})`, (outcomes.get(`${String(l.outcome)} (receive ${String(l.receiveCount)})`) ?? 0) + 1);
        process.stdout.write(`  kill ${k + 1}/${KILLS}: ${fmt(killedAt - firstBody)} ms into the invocation; resumed after ${resume.slice(-ids.length).map((v) => fmt(v)).join(", ")} ms\n`);
      }
    } finally {
      e2e.close();
    }
  } finally {
    await Promise.all([dynamodb.stop(), sqs.stop()]);
  }
  const q = quantiles(resume);
  const r = quantiles(sinceReceipt);
  console.log(
    `\n${table(
      ["measurement", "n", "p50", "p90", "max", "bound"],
      [
        ["kill → crashed run's next body, in another container (ms)", String(q.n), fmt(q.p50), fmt(q.p90), fmt(q.max), `≤ ${timings.worstCaseResumeMs}`],
        ["   wake received (first body) → next body (ms)", String(r.n), fmt(r.p50), fmt(r.p90), fmt(r.max), `≈ ${timings.visibilityTimeoutSeconds * 1000}`],
      ],
    )}`,
  );
  console.log(`wake outcomes in this container: ${[...outcomes].map(([k, n]) => `${k} ×${n}`).join(", ")}`);
}

await main();
