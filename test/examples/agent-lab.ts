/**
 * The refund agent's crash lab: a temp folder with a SQLite journal, a client on it (this process
 * never executes runs), and worker child processes (`agent-worker.ts`) started with the same
 * module conditions as `npm start`. Assertions read files back: the journal, the workers' step
 * events, the mock model's call log, the refund ledger.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { StepEvent } from "waymark";
import { createLocalRuntime } from "waymark/local";
import { refundAgent } from "../../functions/refund-agent.ts";
import { supportModelCalls } from "../../functions/services/support-model.ts";
import { FakeRefunds } from "../../functions/services/refunds.ts";
import { ExecutionLog } from "../crash/instrument.ts";

const workerScript = fileURLToPath(new URL("./agent-worker.ts", import.meta.url));

export interface Worker {
  child: ChildProcess;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  output: () => string;
}

export class AgentLab {
  readonly dir = mkdtempSync(join(tmpdir(), "waymark-agent-"));
  readonly journal = join(this.dir, "journal.db");
  private readonly runtime = createLocalRuntime({ workflows: [refundAgent], file: this.journal });
  readonly client = this.runtime.client;
  private readonly workers: Worker[] = [];

  /** Starts a worker process on the journal; `crashAt` is `<outcome>:<stepId>` or `body:<stepId>`. */
  spawn(label: string, runId: string, crashAt?: string): Worker {
    const env: NodeJS.ProcessEnv = { ...process.env, WAYMARK_DEMO_DIR: this.dir, AGENT_JOURNAL: this.journal, AGENT_RUN_ID: runId, AGENT_EVENTS: join(this.dir, "events.jsonl"), AGENT_LABEL: label };
    if (crashAt !== undefined) env.AGENT_CRASH_AT = crashAt;
    const child = spawn(process.execPath, ["--conditions=waymark-source", "--import", "tsx", workerScript], { env, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
    const worker = { child, exit, output: () => output };
    this.workers.push(worker);
    return worker;
  }

  /** Step events the workers reported, in order. */
  events(worker?: string): Array<StepEvent & { worker: string }> {
    const file = join(this.dir, "events.jsonl");
    if (!existsSync(file)) return [];
    const all = readFileSync(file, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l) as StepEvent & { worker: string });
    return worker === undefined ? all : all.filter((e) => e.worker === worker);
  }

  modelCalls() {
    return supportModelCalls(this.dir);
  }

  /** Executions of step bodies by the workers (killed ones included), as `stepId` in order. */
  executions(): string[] {
    return new ExecutionLog(this.dir).read().map((e) => e.stepId);
  }

  refunds() {
    return new FakeRefunds(this.dir).refunds();
  }

  async dispose(): Promise<void> {
    for (const w of this.workers) if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill("SIGKILL");
    await Promise.all(this.workers.map((w) => w.exit));
    await this.runtime.close();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
