/**
 * run.ts's side of the worker protocol (workers/serve.mjs is the other): each system runs in a
 * process of its own, on the Node it needs, and measures its own workloads, so the parent's
 * messaging is never timed. One request at a time.
 */
import { type ChildProcess, fork } from "node:child_process";

export interface WorkerSpec {
  name: string;
  script: string;
  execPath: string;
  execArgv?: string[];
  cwd: string;
  env?: Record<string, string>;
}

interface Reply {
  id: number;
  ok: boolean;
  value?: unknown;
  error?: string;
}

export class PeerWorker {
  private readonly child: ChildProcess;
  private output = "";
  private next = 0;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private readonly exited: Promise<void>;

  constructor(readonly spec: WorkerSpec) {
    this.child = fork(spec.script, [], {
      execPath: spec.execPath,
      execArgv: spec.execArgv ?? [],
      cwd: spec.cwd,
      env: { ...process.env, ...spec.env },
      stdio: ["ignore", "pipe", "pipe", "ipc"],
    });
    const keep = (chunk: Buffer) => {
      this.output = (this.output + chunk.toString("utf8")).slice(-4000);
    };
    this.child.on("error", (err) => keep(Buffer.from(`\n[${spec.name} worker: ${err.message}]\n`)));
    this.child.stdout?.on("data", keep);
    this.child.stderr?.on("data", keep);
    this.child.on("message", (message: Reply) => {
      const waiter = this.pending.get(message.id);
      this.pending.delete(message.id);
      if (!waiter) return;
      if (message.ok) waiter.resolve(message.value);
      else waiter.reject(new Error(`${spec.name}: ${message.error ?? "failed"}`));
    });
    this.exited = new Promise((resolve) =>
      this.child.once("exit", (code, signal) => {
        for (const waiter of this.pending.values()) waiter.reject(new Error(`${spec.name} worker exited (${code ?? signal}); its output ends:\n${this.output}`));
        this.pending.clear();
        resolve();
      }),
    );
  }

  /** A request not answered within `timeoutMs` fails with the worker's last output (a hung peer must not stall the rounds). */
  request(op: string, args: Record<string, unknown> = {}, timeoutMs = 180_000): Promise<unknown> {
    const id = ++this.next;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`${this.spec.name} ${op}: no answer in ${timeoutMs} ms; its output ends:\n${this.output}`));
      }, timeoutMs);
      const settle = <T>(fn: (v: T) => void) => (v: T) => {
        clearTimeout(timer);
        fn(v);
      };
      this.pending.set(id, { resolve: settle(resolve), reject: settle(reject) });
      if (!this.child.connected) return this.fail(id, new Error(`${this.spec.name} ${op}: the worker is gone`));
      // With a callback, a send on a channel closing meanwhile fails here instead of as an 'error' event.
      this.child.send({ id, op, args }, (err) => err && this.fail(id, err));
    });
  }

  private fail(id: number, err: Error): void {
    const waiter = this.pending.get(id);
    this.pending.delete(id);
    waiter?.reject(err);
  }

  async number(op: string, args: Record<string, unknown>): Promise<number> {
    const value = await this.request(op, args);
    if (typeof value !== "number" || !Number.isFinite(value)) throw new Error(`${this.spec.name} ${op}: not a figure: ${String(value)}`);
    return value;
  }

  /** Asks the worker to close, then ends it if it lingers (open handles of a peer's SDK). */
  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    await Promise.race([this.request("close").catch(() => undefined), new Promise((r) => setTimeout(r, 10_000))]);
    this.child.kill("SIGTERM");
    const timer = setTimeout(() => this.child.kill("SIGKILL"), 5_000);
    await this.exited;
    clearTimeout(timer);
  }
}
