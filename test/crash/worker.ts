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
 *       started:<stepId>   in the step body, right after it was logged, before it does anything
 *       before-lease       after claiming a wake, before taking the run's lease
 *       before-lease:<runId>  as the invocation of that run is about to take its lease (a child
 *                          started in-process: after its start, with no wake written)
 *       finish:<runId>     as an invocation is about to write the run's end (a child: after
 *                          its end was delivered to its parent)
 *       continue:<runId>   as `continueAsNew` is about to switch the run to its next incarnation
 *       continued:<runId>  right after that switch was written, before the start wake is sent
 *       ended:<runId>      when an invocation of that run has ended (after its `invocation` event)
 *       finished:<runId>   right after the run's end was written (finishRun returned), before the
 *                          invocation frees its flow-control slot; `finished:<id>,<id>,…` for the
 *                          first of those runs this worker finishes, `finished:*` for whichever run
 *                          it finishes first. A `crash` event names the run first.
 *   WORKER_FREEZE_AT    optional: a point (as above, `inside:` or `started:`) where the worker stops
 *                       itself with SIGSTOP, once per run, after noting a `freeze` event; when the
 *                       test sends SIGCONT it notes `thaw` and carries on from that very point
 *   WORKER_LEASE_TTL_MS optional: the runtime's lease TTL (default: the runtime's)
 *   WORKER_WATCHDOG_MS  optional: the runtime's watchdog interval (default: the runtime's)
 *   WORKER_NOTE_LEASE   optional, "1": each body execution records the run's lease owner as read
 *                       from the journal file when the body started (`BodyExecution.leaseOwner`)
 *   WORKER_NOTE_READY   optional, "1": the `ready` event holds each listed run's lease owner and
 *                       wake keys as the journal showed them when `runtime.start()` resolved
 *   WORKER_DEADLINE_MS  optional: how long to wait for the runs before failing (default 60 s)
 *   WORKER_LOG          optional, "1": the runtime's structured entries go to `events.jsonl` as `log` events
 *
 * `ready` is noted once `runtime.start()` has resolved (start-up recovery done). Besides `ready`
 * and `step`, `events.jsonl` gets an `invocation` event (its outcome) for every
 * invocation that ends, and `freeze`/`thaw` events.
 */
import { appendFileSync } from "node:fs";
import BetterSqlite3 from "better-sqlite3";
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
  type: "ready" | "step" | "invocation" | "freeze" | "thaw" | "crash" | "log";
  /** `log`, with WORKER_LOG: one of the runtime's structured entries. */
  entry?: Record<string, unknown>;
  step?: StepEvent;
  /** `ready`: the runtime's lease owner prefix (each invocation's owner starts with it). */
  owner?: string;
  /** `invocation`, `freeze`, `thaw`, `crash`: the run. */
  runId?: string;
  /** `invocation`: how it ended (`InvocationResult.status`). */
  result?: string;
  /** `freeze`, `thaw`, `crash`: the point. */
  point?: string;
  /** `ready`, with WORKER_NOTE_READY: each listed run as the journal showed it when `start()` resolved. */
  runs?: Record<string, ReadyRun>;
}

/** A run as a worker saw it when it became ready. */
export interface ReadyRun {
  leaseOwner: string | null;
  /** The keys of the run's wakes in the wake table. */
  wakes: string[];
}

const journal = required("WORKER_JOURNAL");
const dir = required("WORKER_DIR");
const runIds = required("WORKER_RUNS").split(",");
const label = process.env.WORKER_LABEL ?? String(process.pid);
const crashAt = process.env.WORKER_CRASH_AT ?? "";
const concurrency = process.env.WORKER_CONCURRENCY ? Number(process.env.WORKER_CONCURRENCY) : undefined;
const freezeAt = process.env.WORKER_FREEZE_AT ?? "";
const leaseTtlMs = process.env.WORKER_LEASE_TTL_MS ? Number(process.env.WORKER_LEASE_TTL_MS) : undefined;
const watchdogIntervalMs = process.env.WORKER_WATCHDOG_MS ? Number(process.env.WORKER_WATCHDOG_MS) : undefined;
const deadlineMs = process.env.WORKER_DEADLINE_MS ? Number(process.env.WORKER_DEADLINE_MS) : 60_000;
const frozenRuns = new Set<string>();
const eventsFile = join(dir, "events.jsonl");
const log = new ExecutionLog(dir);

// A second connection, read only by the instrumentation: a synchronous read as a body starts.
const leaseOwner =
  process.env.WORKER_NOTE_LEASE === "1"
    ? (() => {
        const db = new BetterSqlite3(journal);
        db.pragma("busy_timeout = 5000");
        const select = db.prepare<[string], string | null>("SELECT lease_owner FROM runs WHERE run_id = ?").pluck();
        return (runId: string) => ({ leaseOwner: select.get(runId) ?? null });
      })()
    : undefined;

// What the journal shows for each listed run the moment start() resolved (WORKER_NOTE_READY).
const readyState =
  process.env.WORKER_NOTE_READY === "1"
    ? (() => {
        const db = new BetterSqlite3(journal);
        db.pragma("busy_timeout = 5000");
        const owner = db.prepare<[string], string | null>("SELECT lease_owner FROM runs WHERE run_id = ?").pluck();
        const wakes = db.prepare<[string], string>("SELECT key FROM wakes WHERE run_id = ? ORDER BY key").pluck();
        return () => Object.fromEntries(runIds.map((id): [string, ReadyRun] => [id, { leaseOwner: owner.get(id) ?? null, wakes: wakes.all(id) }]));
      })()
    : undefined;

const runtime = createLocalRuntime({
  workflows: crashWorkflows.map((w) =>
    instrument(w, {
      log,
      worker: label,
      ...(leaseOwner ? { annotate: leaseOwner } : {}),
      beforeBody: (e) => {
        freezeIf(`started:${e.stepId}`, e.runId);
        crashIf(`started:${e.stepId}`);
      },
      afterBody: (e) => {
        freezeIf(`inside:${e.stepId}`, e.runId);
        crashIf(`inside:${e.stepId}`);
      },
    }),
  ),
  file: journal,
  ...(process.env.WORKER_LOG === "1" ? { log: (entry: Record<string, unknown>) => note({ type: "log", entry }) } : {}),
  ...(concurrency === undefined ? {} : { concurrency }),
  ...(leaseTtlMs === undefined ? {} : { leaseTtlMs }),
  ...(watchdogIntervalMs === undefined ? {} : { watchdogIntervalMs }),
  onStep: (step) => {
    note({ type: "step", step });
    crashIf(`${step.outcome}:${step.stepId}`);
  },
  onInvocation: (runId, result) => {
    note({ type: "invocation", runId, result: result.status });
    crashIf(`ended:${runId}`);
  },
});
if (crashAt === "before-lease" || crashAt.startsWith("before-lease:")) {
  // Dies in the window between claiming a wake (or an in-process start) and taking the run's lease.
  const target = crashAt.startsWith("before-lease:") ? crashAt.slice("before-lease:".length) : undefined;
  const acquire = runtime.store.acquireLease.bind(runtime.store);
  runtime.store.acquireLease = (runId, ...rest) => {
    if (target === undefined || target === runId) {
      note({ type: "crash", runId, point: crashAt });
      process.kill(process.pid, "SIGKILL");
    }
    return acquire(runId, ...rest);
  };
}
if (crashAt.startsWith("finish:")) {
  const finish = runtime.store.finishRun.bind(runtime.store);
  runtime.store.finishRun = (runId, ...rest) => {
    crashIf(`finish:${runId}`);
    return finish(runId, ...rest);
  };
}
if (crashAt.startsWith("continue:") || crashAt.startsWith("continued:")) {
  const switchOver = runtime.store.continueRun.bind(runtime.store);
  runtime.store.continueRun = async (runId, ...rest) => {
    crashIf(`continue:${runId}`);
    const ok = await switchOver(runId, ...rest);
    crashIf(`continued:${runId}`);
    return ok;
  };
}
if (crashAt.startsWith("finished:")) {
  const targets = new Set(crashAt.slice("finished:".length).split(","));
  const finish = runtime.store.finishRun.bind(runtime.store);
  runtime.store.finishRun = async (runId, ...rest) => {
    const ok = await finish(runId, ...rest);
    if (ok && (targets.has("*") || targets.has(runId))) {
      note({ type: "crash", runId, point: `finished:${runId}` });
      process.kill(process.pid, "SIGKILL");
    }
    return ok;
  };
}
await runtime.start();
note({ type: "ready", owner: runtime.owner, ...(readyState ? { runs: readyState() } : {}) });

await waitForRuns(Date.now() + deadlineMs);
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

/** Stops this process where it stands (the next instruction runs only after SIGCONT), once per run. */
function freezeIf(point: string, runId: string): void {
  if (point !== freezeAt || frozenRuns.has(runId)) return;
  frozenRuns.add(runId);
  note({ type: "freeze", runId, point });
  process.kill(process.pid, "SIGSTOP");
  note({ type: "thaw", runId, point });
}

function note(event: Omit<WorkerEvent, "worker" | "pid" | "at">): void {
  appendFileSync(eventsFile, `${JSON.stringify({ worker: label, pid: process.pid, at: Date.now(), ...event })}\n`);
}

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}
