/**
 * A crash-test worker: one process hosting the local runtime on a journal file until the runs it
 * is told about exist and have finished, then exiting 0. Configured by environment:
 *
 *   WORKER_JOURNAL      the SQLite journal file
 *   WORKER_DIR          where the executions and events logs go (and, through WAYMARK_DEMO_DIR,
 *                       the fake providers' files)
 *   WORKER_RUNS         comma-separated run ids to wait for
 *   WORKER_LABEL        a name for this worker in the logs
 *   WORKER_CONCURRENCY  most runs invoked at once (default: the runtime's)
 *   WORKER_CRASH_AT     optional: where to SIGKILL itself (no shutdown, no flush), one of
 *       inside:<stepId>    in the step body, right after the provider call returned, before the record
 *       completed:<stepId> the moment the step's record is written
 *       blocked:<stepId>   when the step suspends the run, before its wake and record are written
 *       replayed:<stepId> / resolved:<stepId>   when that step event is emitted
 *       before-lease       after claiming a wake, before taking the run's lease
 */
import { appendFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { type StepEvent, TERMINAL_STATUSES } from "waymark";
import { createLocalRuntime } from "waymark/local";
import { ExecutionLog, instrument } from "./instrument.ts";
import { crashWorkflows } from "./workflows.ts";

/** One line of `events.jsonl`. */
export interface WorkerEvent {
  worker: string;
  pid: number;
  at: number;
  type: "ready" | "step";
  step?: StepEvent;
}

const journal = required("WORKER_JOURNAL");
const dir = required("WORKER_DIR");
const runIds = required("WORKER_RUNS").split(",");
const label = process.env.WORKER_LABEL ?? String(process.pid);
const crashAt = process.env.WORKER_CRASH_AT ?? "";
const concurrency = process.env.WORKER_CONCURRENCY ? Number(process.env.WORKER_CONCURRENCY) : undefined;
const eventsFile = join(dir, "events.jsonl");
const log = new ExecutionLog(dir);

const runtime = createLocalRuntime({
  workflows: crashWorkflows.map((w) => instrument(w, { log, worker: label, afterBody: (e) => crashIf(`inside:${e.stepId}`) })),
  file: journal,
  ...(concurrency === undefined ? {} : { concurrency }),
  onStep: (step) => {
    note({ type: "step", step });
    crashIf(`${step.outcome}:${step.stepId}`);
  },
});
if (crashAt === "before-lease") {
  // Dies in the window between claiming a wake and taking the run's lease.
  const acquire = runtime.store.acquireLease.bind(runtime.store);
  runtime.store.acquireLease = (...args) => {
    process.kill(process.pid, "SIGKILL");
    return acquire(...args);
  };
}
runtime.start();
note({ type: "ready" });

await waitForRuns(Date.now() + 60_000);
await runtime.close();

/** Until every listed run has finished; a run may not have been created yet. */
async function waitForRuns(deadline: number): Promise<void> {
  for (const runId of runIds) {
    for (;;) {
      const run = await runtime.store.getRun(runId);
      if (run && TERMINAL_STATUSES.has(run.status)) break;
      if (Date.now() > deadline) throw new Error(`worker ${label}: run ${runId} is ${run?.status ?? "not created"} at the deadline`);
      await delay(10);
    }
  }
}

function crashIf(point: string): void {
  if (point === crashAt) process.kill(process.pid, "SIGKILL");
}

function note(event: Omit<WorkerEvent, "worker" | "pid" | "at">): void {
  appendFileSync(eventsFile, `${JSON.stringify({ worker: label, pid: process.pid, at: Date.now(), ...event })}\n`);
}

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}
