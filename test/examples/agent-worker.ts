/**
 * A worker process for the refund agent's crash tests: hosts the local runtime on a journal file
 * until the run finishes, then exits 0. It logs every step event to a file, and with
 * AGENT_CRASH_AT=<outcome>:<stepId> kills itself with SIGKILL (no shutdown, no flush) the moment
 * that event happens — `completed:tool.issue_refund` is right after the refund's record is written;
 * `body:<stepId>` kills it the moment that step's body returned, before its record is written
 * (the side effect happened, the journal does not know: the gap idempotency keys close).
 *
 *   AGENT_JOURNAL   the SQLite journal file      AGENT_RUN_ID  the run to wait for
 *   AGENT_EVENTS    the step events (JSON lines) AGENT_LABEL   this worker's name in the events
 *   WAYMARK_DEMO_DIR  where the fake model, refund API and mailer keep their files
 */
import { appendFileSync } from "node:fs";
import { createLocalRuntime } from "waymark/local";
import { refundAgent } from "../../functions/refund-agent.ts";
import { ExecutionLog, instrument } from "../crash/instrument.ts";

const journal = required("AGENT_JOURNAL");
const runId = required("AGENT_RUN_ID");
const eventsFile = required("AGENT_EVENTS");
const label = process.env.AGENT_LABEL ?? String(process.pid);
const crashAt = process.env.AGENT_CRASH_AT ?? "";

// Step bodies are logged (executions.jsonl beside the fakes) and may be killed right after they return.
const log = new ExecutionLog(required("WAYMARK_DEMO_DIR"));
const workflow = instrument(refundAgent, { log, worker: label, afterBody: (e) => (`body:${e.stepId}` === crashAt ? process.kill(process.pid, "SIGKILL") : undefined) });

const runtime = createLocalRuntime({
  workflows: [workflow],
  file: journal,
  onStep: (event) => {
    appendFileSync(eventsFile, `${JSON.stringify({ worker: label, ...event })}\n`);
    if (`${event.outcome}:${event.stepId}` === crashAt) process.kill(process.pid, "SIGKILL");
  },
});
runtime.start();
await runtime.waitForRun(runId, { timeoutMs: 120_000 });
await runtime.close();

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}
