/**
 * The crash-test lab: a temp directory with a real SQLite journal file, a client on it (this
 * process never executes runs), and worker child processes (`worker.ts`) started on it with
 * the same module conditions as `npm start`. Everything a test asserts on is read back from
 * files: the journal, the executions log, the workers' step events, the fake payment ledger.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, existsSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type JournalRecord, type RunMeta, TERMINAL_STATUSES } from "waymark";
import { until } from "../support/until.ts";
import { createLocalRuntime } from "waymark/local";
import { FakePayments, type Charge } from "../../functions/services/payments.ts";
import { ExecutionLog } from "./instrument.ts";
import type { WorkerEvent } from "./worker.ts";
import { crashWorkflows } from "./workflows.ts";

const workerScript = fileURLToPath(new URL("./worker.ts", import.meta.url));

export interface WorkerSpec {
  label: string;
  runs: string[];
  /** See `worker.ts`: `inside:<stepId>`, `completed:<stepId>`, `blocked:<stepId>`, … */
  crashAt?: string;
  concurrency?: number;
  /** Start the worker under a parent that never reaps it (see `spawn`); `child` is that parent. */
  unreaped?: boolean;
  /** See `worker.ts`: where the worker stops itself with SIGSTOP (once per run), e.g. `inside:<stepId>`. */
  freezeAt?: string;
  /** The worker runtime's lease TTL. */
  leaseTtlMs?: number;
  /** The worker runtime's watchdog interval. */
  watchdogMs?: number;
  /** Record the run's lease owner with every body execution (`BodyExecution.leaseOwner`). */
  noteLease?: boolean;
  /** Record each listed run's lease owner and wakes in the `ready` event (`WorkerEvent.runs`). */
  noteReady?: boolean;
  /** How long the worker waits for its runs before failing. Default 60 s. */
  deadlineMs?: number;
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A worker child process; `exited` is set once it has exited and been reaped. */
export class WorkerProcess {
  exited: Exit | undefined;
  readonly exit: Promise<Exit>;
  private output = "";

  constructor(
    readonly label: string,
    readonly child: ChildProcess,
    readonly unreaped = false,
  ) {
    child.stdout?.on("data", (chunk: Buffer) => (this.output += chunk.toString()));
    child.stderr?.on("data", (chunk: Buffer) => (this.output += chunk.toString()));
    this.exit = new Promise((resolve) =>
      child.on("exit", (code, signal) => {
        this.exited = { code, signal };
        resolve(this.exited);
      }),
    );
  }

  /** For assertion messages: how it ended and what it printed. */
  describe(): string {
    const how = this.exited ? (this.exited.signal ?? `exit ${this.exited.code}`) : "still running";
    return `worker ${this.label} (pid ${this.child.pid}): ${how}${this.output ? `\n${this.output}` : ""}`;
  }
}

export class CrashLab {
  readonly dir = mkdtempSync(join(tmpdir(), "waymark-crash-"));
  readonly journal = join(this.dir, "journal.db");
  /** Client only: `start()` is never called, so this process executes nothing. */
  private readonly runtime = createLocalRuntime({ workflows: crashWorkflows, file: this.journal });
  readonly client = this.runtime.client;
  /** The journal file's wake table, to add wakes of our own (duplicates). */
  readonly wakes = this.runtime.wakes;
  /** Every execution of a step body, by any worker. */
  readonly log = new ExecutionLog(this.dir);
  private readonly workers: WorkerProcess[] = [];

  spawn(spec: WorkerSpec): WorkerProcess {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      WAYMARK_DEMO_DIR: this.dir,
      WORKER_JOURNAL: this.journal,
      WORKER_DIR: this.dir,
      WORKER_RUNS: spec.runs.join(","),
      WORKER_LABEL: spec.label,
    };
    if (spec.crashAt !== undefined) env.WORKER_CRASH_AT = spec.crashAt;
    if (spec.concurrency !== undefined) env.WORKER_CONCURRENCY = String(spec.concurrency);
    if (spec.freezeAt !== undefined) env.WORKER_FREEZE_AT = spec.freezeAt;
    if (spec.leaseTtlMs !== undefined) env.WORKER_LEASE_TTL_MS = String(spec.leaseTtlMs);
    if (spec.watchdogMs !== undefined) env.WORKER_WATCHDOG_MS = String(spec.watchdogMs);
    if (spec.noteLease) env.WORKER_NOTE_LEASE = "1";
    if (spec.noteReady) env.WORKER_NOTE_READY = "1";
    if (spec.deadlineMs !== undefined) env.WORKER_DEADLINE_MS = String(spec.deadlineMs);
    const node = [process.execPath, "--conditions=waymark-source", "--import", "tsx", workerScript] as const;
    // Unreaped: the worker's parent is a `sleep` that never waits for it, so once it dies it
    // stays a zombie (its pid still answers kill(pid, 0)) until that parent goes.
    const child = spec.unreaped
      ? spawn("/bin/sh", ["-c", '"$0" "$@" & exec sleep 120', ...node], { env, stdio: ["ignore", "pipe", "pipe"] })
      : spawn(node[0], node.slice(1), { env, stdio: ["ignore", "pipe", "pipe"] });
    const worker = new WorkerProcess(spec.label, child, spec.unreaped === true);
    this.workers.push(worker);
    return worker;
  }

  /** The lease owner prefix of a worker's runtime, as it reported it once ready. */
  workerOwner(label: string): string | undefined {
    return this.events().find((e) => e.worker === label && e.type === "ready")?.owner;
  }

  /** The pid of a worker as it reported it (an unreaped worker is not our child). */
  workerPid(label: string): number | undefined {
    return this.events().find((e) => e.worker === label && e.type === "ready")?.pid;
  }

  private unreapedPids(): number[] {
    return this.workers.flatMap((w) => {
      const pid = w.unreaped ? this.workerPid(w.label) : undefined;
      return pid === undefined ? [] : [pid];
    });
  }

  events(): WorkerEvent[] {
    const file = join(this.dir, "events.jsonl");
    if (!existsSync(file)) return [];
    return readFileSync(file, "utf8")
      .split("\n")
      .filter((line) => line.length > 0)
      .map((line) => JSON.parse(line) as WorkerEvent);
  }

  /** The fake payment provider's ledger: every card charge it made. */
  charges(): Charge[] {
    return new FakePayments(this.dir).charges();
  }

  /** Waits for the run to reach a terminal status and returns it. */
  finished(runId: string, timeoutMs = 120_000): Promise<RunMeta> {
    return until(
      `run ${runId} to finish`,
      async () => {
        const run = await this.client.get(runId);
        return TERMINAL_STATUSES.has(run.status) ? run : undefined;
      },
      timeoutMs,
    );
  }

  /** The run's journal records, in write order. */
  async records(runId: string): Promise<JournalRecord[]> {
    const { entries } = await this.client.history(runId);
    return entries.flatMap((e) => (e.record ? [e.record] : []));
  }

  /** Kills the workers still alive (only those this lab started), closes the file, removes the folder. */
  async dispose(): Promise<void> {
    for (const pid of this.unreapedPids()) {
      const state = processState(pid);
      if (state !== undefined && state !== "Z") process.kill(pid, "SIGKILL");
    }
    for (const w of this.workers) if (!w.exited) w.child.kill("SIGKILL");
    await Promise.all(this.workers.map((w) => w.exit));
    await this.runtime.close();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Runs `body` with a fresh lab and disposes of it afterwards, pass or fail. */
export async function withLab<T>(body: (lab: CrashLab) => Promise<T>): Promise<T> {
  const lab = new CrashLab();
  try {
    return await body(lab);
  } finally {
    await lab.dispose();
  }
}

/** The state letter `ps` shows for a pid (`Z` for a zombie), or undefined if there is no such process. */
export function processState(pid: number): string | undefined {
  const ps = spawnSync("ps", ["-o", "stat=", "-p", String(pid)], { encoding: "utf8" });
  return ps.status === 0 ? ps.stdout.trim().charAt(0) : undefined;
}
