/**
 * The embedded default: the engine on a SQLite journal (one file, WAL), a wake table in the
 * same file, and a timer loop, all in one process. `kill -9` loses nothing: a new process on
 * the same file takes over the dead one's leases and due wakes and resumes every run.
 */
import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import { Client } from "../client.ts";
import type { AnyWorkflow } from "../core/definition.ts";
import { Engine, type InvocationResult, type LogEntry } from "../core/engine.ts";
import type { StepEvent } from "../core/execution.ts";
import { createRegistry } from "../core/registry.ts";
import { RunNotFoundError } from "../core/errors.ts";
import { type Lease, type RunMeta, systemClock, TERMINAL_STATUSES, type Wake } from "../ports.ts";
import { WakePool } from "../wake-loop.ts";
import { createApprovalLinks, type ApprovalLinksOptions } from "../http/tokens.ts";
import { openLocalDatabase } from "./database.ts";
import { SqliteJournalStore } from "./sqlite-store.ts";
import { SqliteWakeTable } from "./wake-table.ts";
import type { Logger } from "../observe/logger.ts";
import { entrySink } from "../observe/sinks.ts";
import { createTracing, loadOpenTelemetry, traceWakes } from "../observe/tracing.ts";
import { DirPayloadStore, payloadDirFor } from "./dir-payloads.ts";
import { runPayloadPrefix, type PayloadOptions } from "../core/payloads.ts";

export interface LocalRuntimeOptions {
  workflows: ReadonlyArray<AnyWorkflow>;
  /** The journal file. Default `.waymark/journal.db`. */
  file?: string;
  /** Most runs invoked at once. Default 8. */
  concurrency?: number;
  /** Longest idle pause between polls of the wake table (other processes may add wakes). Default 50 ms. */
  pollIntervalMs?: number;
  /** Lease length, renewed while a run executes. Default 10 s. */
  leaseTtlMs?: number;
  /** Longest one invocation may hold a run before giving it up (a stuck step body). Default 15 minutes. */
  maxInvocationMs?: number;
  /** How often the watchdog looks for overdue runs (and for finished runs past retention). Default 5 s. */
  watchdogIntervalMs?: number;
  /**
   * Days a finished run is kept; then the watchdog deletes it with all its records and wakes,
   * and its id may be started afresh. Fractions are allowed (tests). Default 30, as on AWS.
   */
  retentionDays?: number;
  /** Every structured entry (with its level). */
  log?: (entry: LogEntry) => void;
  /** Where log lines go (a Powertools `Logger`, or any object with `info`/`warn`/`error`). Default: none. */
  logger?: Logger;
  /** OpenTelemetry spans when `@opentelemetry/api` is installed. Default: true. */
  tracing?: boolean;
  onStep?: (event: StepEvent) => void;
  onInvocation?: (runId: string, result: InvocationResult) => void;
  /** The webhook secret (and public base URL) with which `waitForSignal({ notify })` mints approval links. */
  webhook?: ApprovalLinksOptions;
  /**
   * Store large values by reference in a directory: `true` for `<file>.payloads/` beside the
   * journal with the default thresholds, or a directory and thresholds of your own.
   */
  payloads?: boolean | (Omit<PayloadOptions, "store"> & { dir?: string });
}

const ownerPrefix = `local:${hostname()}:`;

/** True when a lease belongs to a process on this machine that no longer exists. */
export function isDeadLocalOwner(lease: Lease): boolean {
  if (!lease.owner.startsWith(ownerPrefix)) return false;
  const pid = Number(lease.owner.slice(ownerPrefix.length).split(":")[0]);
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return false;
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "ESRCH";
  }
  return isZombie(pid);
}

/**
 * A killed process that its parent has not reaped yet still answers `kill(pid, 0)`. On Linux,
 * `/proc/<pid>/stat` tells: state `Z` (zombie) or `X` (dead). Elsewhere, assume alive (the lease
 * then simply expires).
 */
function isZombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    return state === "Z" || state === "X";
  } catch {
    return false;
  }
}

/**
 * Creates the local runtime. Call `start()` to begin executing runs.
 *
 * @example
 * ```ts
 * import { createLocalRuntime } from "waymark/local";
 * const rt = createLocalRuntime({ workflows: [orderFlow], file: ".waymark/journal.db" });
 * rt.start();
 * await rt.client.start(orderFlow, { runId: "order-8472", input: order });
 * const run = await rt.waitForRun("order-8472");
 * await rt.close();
 * ```
 */
export function createLocalRuntime(options: LocalRuntimeOptions): LocalRuntime {
  return new LocalRuntime(options);
}

export class LocalRuntime {
  readonly owner = `${ownerPrefix}${process.pid}:${globalThis.crypto.randomUUID().slice(0, 8)}`;
  readonly store: SqliteJournalStore;
  readonly wakes: SqliteWakeTable;
  readonly client: Client;
  private readonly payloadStore: DirPayloadStore | undefined;
  readonly engine: Engine;
  private readonly db: ReturnType<typeof openLocalDatabase>;
  private running = false;
  private loopDone: Promise<void> | undefined;
  private wakeUp: (() => void) | undefined;
  private watchdog: NodeJS.Timeout | undefined;
  private readonly pollMs: number;
  private readonly log: ((entry: LogEntry) => void) | undefined;

  constructor(private readonly o: LocalRuntimeOptions) {
    this.db = openLocalDatabase(o.file ?? ".waymark/journal.db");
    this.store = new SqliteJournalStore(this.db, o.retentionDays === undefined ? {} : { retentionDays: o.retentionDays });
    this.pollMs = o.pollIntervalMs ?? 50;
    // Wakes due now interrupt the idle pause instead of waiting for the next poll.
    this.wakes = new SqliteWakeTable(this.db, {
      onSchedule: (wake: Wake) => {
        if (wake.at <= Date.now() + this.pollMs) this.wakeUp?.();
      },
    });
    const workflows = createRegistry(o.workflows);
    const p = o.payloads === true ? {} : o.payloads || undefined;
    const payloads = p ? { ...(p.inlineBytes === undefined ? {} : { inlineBytes: p.inlineBytes }), ...(p.maxBytes === undefined ? {} : { maxBytes: p.maxBytes }), store: new DirPayloadStore(p.dir ?? payloadDirFor(o.file ?? ".waymark/journal.db")) } : undefined;
    this.payloadStore = payloads?.store;
    const ports = { store: this.store, wakes: this.wakes, clock: systemClock, workflows, ...(payloads ? { payloads } : {}) };
    this.client = new Client(ports);
    this.log = o.log || o.logger ? entrySink({ ...(o.log ? { log: o.log } : {}), ...(o.logger ? { logger: o.logger } : {}) }) : undefined;
    const tracing = o.tracing === false ? undefined : createTracing(loadOpenTelemetry);
    this.engine = new Engine({
      ...ports,
      ...(tracing ? { wakes: traceWakes(this.wakes, tracing), hooks: tracing.hooks } : {}),
      owner: this.owner,
      leaseTtlMs: o.leaseTtlMs ?? 10_000,
      ...(o.maxInvocationMs === undefined ? {} : { maxInvocationMs: o.maxInvocationMs }),
      ...(this.log ? { log: this.log } : {}),
      ...(o.webhook ? { links: createApprovalLinks(o.webhook) } : {}),
    });
  }

  /** Recovers runs left by dead processes, then executes due wakes until `stop()`. */
  start(): void {
    if (this.running) return;
    this.running = true;
    this.loopDone = this.recover().then(() => this.loop());
    this.watchdog = setInterval(() => void this.sweep().catch(() => {}), this.o.watchdogIntervalMs ?? 5_000);
    this.watchdog.unref();
  }

  /** Stops polling and waits for invocations in progress. */
  async stop(): Promise<void> {
    this.running = false;
    clearInterval(this.watchdog);
    this.wakeUp?.();
    await this.loopDone;
  }

  /** Stops and closes the journal file. */
  async close(): Promise<void> {
    await this.stop();
    this.db.close();
  }

  /** Resolves when the run is completed, failed or cancelled (polling the journal). */
  async waitForRun(runId: string, options: { timeoutMs?: number } = {}): Promise<RunMeta> {
    const deadline = Date.now() + (options.timeoutMs ?? 60_000);
    for (;;) {
      const run = await this.store.getRun(runId);
      if (!run) throw new RunNotFoundError(runId);
      if (TERMINAL_STATUSES.has(run.status)) return this.client.get(runId); // values by reference read back
      if (Date.now() > deadline) throw new Error(`run "${runId}" still ${run.status} after ${options.timeoutMs ?? 60_000} ms`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  private async loop(): Promise<void> {
    const pool = new WakePool({
      engine: this.engine,
      wakes: this.wakes,
      clock: systemClock,
      visibilityMs: (this.o.leaseTtlMs ?? 10_000) * 2,
      concurrency: this.o.concurrency ?? 8,
      invoke: {
        mayBreak: isDeadLocalOwner,
        ...(this.o.onStep ? { onStep: this.o.onStep } : {}),
      },
      ...(this.o.onInvocation ? { onResult: this.o.onInvocation } : {}),
      onError: (runId, error) => this.log?.({ event: "invocation-error", runId, error: String(error) }),
      // A slot came free: look for due wakes at once.
      onFree: () => this.wakeUp?.(),
      isDue: async (runId) => {
        const run = await this.store.getRun(runId);
        return run !== undefined && !TERMINAL_STATUSES.has(run.status) && (run.wakeAt ?? Number.POSITIVE_INFINITY) <= Date.now();
      },
    });
    try {
      while (this.running) {
        await pool.fill();
        if (!this.running) break;
        const next = await this.wakes.nextDueAt();
        const pause = next === undefined ? this.pollMs : Math.min(this.pollMs, Math.max(0, next - Date.now()));
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, pause);
          this.wakeUp = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        this.wakeUp = undefined;
      }
    } finally {
      await pool.idle().catch(() => {});
    }
  }

  /**
   * At start: runs whose lease a dead local process holds, and runs already due (a wake the
   * dead process had claimed stays hidden for a while), are woken now rather than later.
   */
  private async recover(): Promise<void> {
    await this.wakeDeadOwners();
    const due = await this.store.listDueRuns(Date.now(), 1_000);
    for (const run of due) await this.wakes.schedule({ runId: run.runId, at: Date.now(), reason: "watchdog", key: "recover" });
  }

  /** Runs leased by a local process that has died are woken; `mayBreak` then takes the lease. */
  private async wakeDeadOwners(): Promise<void> {
    let cursor: string | undefined;
    do {
      const page = await this.store.listRuns({ status: "running", ...(cursor ? { cursor } : {}) });
      for (const run of page.runs) {
        if (run.lease && isDeadLocalOwner(run.lease)) await this.wakes.schedule({ runId: run.runId, at: Date.now(), reason: "watchdog", key: "recover" });
      }
      cursor = page.cursor;
    } while (cursor);
  }

  /**
   * The watchdog: overdue runs, and runs of a peer process that died, are woken again; finished
   * runs past retention are deleted (a bounded batch per tick; the next tick takes the rest).
   */
  private async sweep(): Promise<void> {
    await this.wakeDeadOwners();
    const overdue = await this.store.listDueRuns(Date.now() - 1_000, 100);
    for (const run of overdue) await this.wakes.schedule({ runId: run.runId, at: Date.now(), reason: "watchdog", key: "watchdog" });
    // Each purged run's values stored by reference go with it.
    for (const run of await this.store.purgeExpired(Date.now(), 100)) {
      await this.payloadStore?.deletePrefix?.(runPayloadPrefix(run.runId, run.createdAt));
      this.o.log?.({ event: "retention", runId: run.runId, createdAt: run.createdAt });
    }
  }
}
