/**
 * A worker process of the demo: hosts the local runtime on the shared journal file until the
 * run finishes. With DEMO_CRASH_AFTER=<step> it kills itself with SIGKILL (no shutdown, no
 * flush) the moment that step's record is written, like a Lambda dying after a charge.
 */
import { appendFileSync } from "node:fs";
import { createLocalRuntime } from "waymark/local";
import { orderFlow } from "../order-flow.ts";

const journal = required("WAYMARK_JOURNAL");
const runId = required("DEMO_RUN_ID");
const eventsFile = required("DEMO_EVENTS");
const crashAfter = process.env.DEMO_CRASH_AFTER;
const label = `worker ${process.env.DEMO_WORKER ?? "?"} (pid ${process.pid})`;

const runtime = createLocalRuntime({
  workflows: [orderFlow],
  file: journal,
  onStep: (event) => {
    appendFileSync(eventsFile, `${JSON.stringify({ worker: process.env.DEMO_WORKER, ...event })}\n`);
    const how =
      event.outcome === "replayed"
        ? "returned from the journal, not executed"
        : event.outcome === "completed"
          ? `executed and recorded (attempt ${event.attempt}, ${event.durationMs} ms)`
          : event.outcome === "blocked"
            ? "suspends the run"
            : event.outcome;
    console.log(`  ${label}: ${event.kind.padEnd(5)} ${event.stepId.padEnd(16)} ${how}`);
    if (event.stepId === crashAfter && event.outcome === "completed") {
      console.log(`  ${label}: SIGKILL now, right after "${event.stepId}" was recorded`);
      process.kill(process.pid, "SIGKILL");
    }
  },
});
// Resolves once start-up recovery is done: a run left by a dead worker is already taken over.
await runtime.start();
console.log(`  ${label}: ready`);
const run = await runtime.waitForRun(runId, { timeoutMs: 120_000 });
await runtime.close();
console.log(`  ${label}: run ${run.runId} is ${run.status}`);

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}
