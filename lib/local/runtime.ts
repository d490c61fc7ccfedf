/**
 * The embedded default: the engine on a SQLite journal (one file, WAL), a wake table in the
 * same file, and a timer loop, all in one process. `kill -9` loses nothing: the other workers on
 * the same file (or a new one) take over the dead one's leases and due wakes at once and resume
 * every run (failover.ts).
 */
import { Client } from "../client.ts";
import type { AnyWorkflow } from "../core/definition.ts";
import { Engine, type InvocationResult, type LogEntry } from "../core/engine.ts";
import type { StepEvent } from "../core/execution.ts";
import { createRegistry } from "../core/registry.ts";
import { RunNotFoundError } from "../core/errors.ts";
import { type RunMeta, systemClock, TERMINAL_STATUSES, type Wake } from "../ports.ts";
import { InProcessStarts, WakePool } from "../wake-loop.ts";
import { createApprovalLinks, type ApprovalLinksOptions } from "../http/tokens.ts";
import { linksWithoutSecret, SECRET_HINTS } from "../http/no-links.ts";
import type { JournalLimits } from "../core/journal-limits.ts";
import { type Durability, openLocalDatabase } from "./database.ts";
import { SqliteJournalStore } from "./sqlite-store.ts";
import type { SqliteTables } from "./sqlite-tables.ts";
import type { TableKeys } from "../core/transact/emulate.ts";
import { SqliteWakeTable } from "./wake-table.ts";
import type { Logger } from "../observe/logger.ts";
import { entrySink } from "../observe/sinks.ts";
import { createTracing, loadOpenTelemetry, traceWakes } from "../observe/tracing.ts";
import { DirPayloadStore, payloadDirFor } from "./dir-payloads.ts";
import { runPayloadPrefix, type PayloadOptions } from "../core/payloads.ts";
import { isDeadLocalOwner, localOwner } from "./owner-life.ts";
import { LocalFailover } from "./failover.ts";
import { RunWaiters } from "./run-waiters.ts";

export { isDeadLocalOwner } from "./owner-life.ts";

/**
 * Options of `createLocalRuntime`: the workflows, the journal file, durability, concurrency,
 * timings, retention, logging and tracing, the webhook, payloads and journal limits.
 */
export interface LocalRuntimeOptions {
  workflows: ReadonlyArray<AnyWorkflow>;
  /** The journal file. Default `.waymark/journal.db`. */
  file?: string;
  /**
   * What a returned journal write survives. `"normal"` (default): the death of the process
   * (crash, `kill -9`, OOM kill); a power loss or OS crash may lose the last writes, never
   * corrupt the file. `"full"`: a power loss or OS crash too, at the price of an fsync per
   * commit; records that are ready together (parallel branches, `step.map` items, runs executing
   * at once) share one commit, so one fsync.
   */
  durability?: Durability;
  /**
   * About how many bytes of record text the runtime keeps in memory of the journals it read or
   * wrote lately, so a run's next replay reads none of them from the file while no other process
   * wrote to it. Default 32 MiB; 0 keeps none.
   */
  journalCacheBytes?: number;
  /**
   * Where the journal file's WAL is checkpointed: `"background"` (default), on a worker thread,
   * off the commits' path; `"inline"`, SQLite's own automatic checkpoint, in the commit that
   * crosses 1,000 WAL pages. What a write survives is the same either way.
   */
  checkpoints?: "background" | "inline";
  /** Most runs invoked at once. Default 8. */
  concurrency?: number;
  /** Longest idle pause between polls of the wake table (other processes may add wakes). Default 50 ms. */
  pollIntervalMs?: number;
  /**
   * Lease length, renewed while a run executes. Default 10 s. A dead worker's leases are taken
   * at once whatever this is; it bounds the wait only for an owner that is frozen (SIGSTOP) or
   * that this machine cannot check (another pid namespace).
   */
  leaseTtlMs?: number;
  /** Longest one invocation may hold a run before giving it up (a stuck step body). Default 15 minutes. */
  maxInvocationMs?: number;
  /**
   * How often the watchdog deletes finished runs past retention, and the longest the failover
   * goes without looking for dead workers' and stranded runs (it also looks at every worker's
   * death and lease expiry, and at least every half lease TTL). Default 5 s.
   */
  watchdogIntervalMs?: number;
  /**
   * Days a finished run is kept; then the watchdog deletes it with all its records and wakes,
   * and its id may be started afresh. Fractions are allowed (tests). Default 30, as on AWS.
   */
  retentionDays?: number;
  /**
   * Emulated user tables for `step.transact`, in the journal file, by name with their key
   * attributes (`{ stock: ["sku"], ledger: ["pk", "sk"] }`); read and seed them through `runtime.tables`.
   */
  tables?: TableKeys;
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
  /**
   * How long one incarnation's journal may grow before a warning, and before the run fails
   * with `JournalLimitError` (the engine's `journalLimits`; defaults: warn at 5,000 records or
   * 4 MiB, fail past 50,000 records or 32 MiB).
   */
  journalLimits?: Partial<JournalLimits>;
}

/**
 * Creates the local runtime. `await start()` to begin executing runs: it resolves once start-up
 * recovery is done.
 *
 * @example
 * ```ts
 * import { createLocalRuntime } from "waymark/local";
 * const rt = createLocalRuntime({ workflows: [orderFlow], file: ".waymark/journal.db" });
 * await rt.start();
 * await rt.client.start(orderFlow, { runId: "order-8472", input: order });
 * const run = await rt.waitForRun("order-8472");
 * await rt.close();
 * ```
 */
export function createLocalRuntime(options: LocalRuntimeOptions): LocalRuntime {
  return new LocalRuntime(options);
}

/**
 * The local runtime: the engine on a SQLite journal with its wake table and timer loop in this
 * process (`createLocalRuntime` makes one).
 *
 * @example
 * ```ts
 * const runtime = createLocalRuntime({ workflows: [orderFlow] });
 * await runtime.start();
 * await runtime.client.handle(orderFlow, "order-8472").start(order);
 * await runtime.close();
 * ```
 */
export class LocalRuntime {
  /**
   * This runtime's lease owner prefix, `local:<host>:<pid>:<start>.<world>:<id>`: the other
   * workers of the journal can tell whether its process lives (owner-life.ts).
   */
  readonly owner = localOwner();
  readonly store: SqliteJournalStore;
  /** The emulated user tables `step.transact` writes: `runtime.tables.get("stock", { sku })`, `runtime.tables.put(…)`. */
  get tables(): SqliteTables {
    return this.store.tables;
  }
  readonly wakes: SqliteWakeTable;
  readonly client: Client;
  private readonly payloadStore: DirPayloadStore | undefined;
  readonly engine: Engine;
  private readonly db: ReturnType<typeof openLocalDatabase>;
  private running = false;
  private started: Promise<void> | undefined;
  private failover: LocalFailover | undefined;
  private readonly file: string;
  private readonly leaseTtlMs: number;
  private readonly loadTracing: (() => ReturnType<typeof loadOpenTelemetry>) | undefined;
  private loopDone: Promise<void> | undefined;
  private wakeUp: (() => void) | undefined;
  /** The loop's pool while it runs: starts due now go straight to a free slot of it (InProcessStarts). */
  private pool: WakePool | undefined;
  private watchdog: NodeJS.Timeout | undefined;
  private readonly pollMs: number;
  private readonly log: ((entry: LogEntry) => void) | undefined;
  /** Callers of `waitForRun` waiting for an invocation of a run to end (run-waiters.ts). */
  private readonly waiters = new RunWaiters();

  constructor(private readonly o: LocalRuntimeOptions) {
    this.file = o.file ?? ".waymark/journal.db";
    this.leaseTtlMs = o.leaseTtlMs ?? 10_000;
    this.db = openLocalDatabase(this.file, {
      ...(o.durability === undefined ? {} : { durability: o.durability }),
      ...(o.journalCacheBytes === undefined ? {} : { journalCacheBytes: o.journalCacheBytes }),
      ...(o.checkpoints === undefined ? {} : { checkpoints: o.checkpoints }),
    });
    this.store = new SqliteJournalStore(this.db, { ...(o.retentionDays === undefined ? {} : { retentionDays: o.retentionDays }), ...(o.tables ? { tables: o.tables } : {}) });
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
    // A start (a new run, a child, a next incarnation) with a slot free here is invoked at once,
    // with no wake row; every other wake, and every start while the slots are full or the
    // runtime is not started, goes to the wake table.
    const starts = new InProcessStarts(this.wakes, () => (this.running ? this.pool : undefined));
    const ports = { store: this.store, wakes: starts, clock: systemClock, workflows, ...(payloads ? { payloads } : {}) };
    this.client = new Client(ports);
    this.log = o.log || o.logger ? entrySink({ ...(o.log ? { log: o.log } : {}), ...(o.logger ? { logger: o.logger } : {}) }) : undefined;
    // Loaded once, during start(), so that the first invocations do not wait for the import.
    let otel: ReturnType<typeof loadOpenTelemetry> | undefined;
    this.loadTracing = o.tracing === false ? undefined : () => (otel ??= loadOpenTelemetry());
    const tracing = this.loadTracing ? createTracing(this.loadTracing) : undefined;
    this.engine = new Engine({
      ...ports,
      ...(tracing ? { wakes: traceWakes(starts, tracing), hooks: tracing.hooks } : {}),
      owner: this.owner,
      leaseTtlMs: this.leaseTtlMs,
      ...(o.maxInvocationMs === undefined ? {} : { maxInvocationMs: o.maxInvocationMs }),
      ...(this.log ? { log: this.log } : {}),
      links: o.webhook ? createApprovalLinks(o.webhook) : linksWithoutSecret(SECRET_HINTS.local),
      ...(o.journalLimits ? { journalLimits: o.journalLimits } : {}),
    });
  }

  /**
   * Joins the journal's other workers, recovers what dead ones left (their leased runs, then due
   * runs nobody will wake, most overdue first), claims the first wakes, and resolves: the
   * runtime is ready, and its first invocations are under way. It then executes due wakes until
   * `stop()`. Calling it again returns the same promise. If recovery fails, the promise rejects
   * (and the loop carries on: the watchdog looks again).
   */
  start(): Promise<void> {
    if (this.started) return this.started;
    this.running = true;
    const failover = new LocalFailover({
      journal: this.file,
      db: this.db,
      store: this.store,
      wakes: this.wakes,
      owner: this.owner,
      scanIntervalMs: Math.min(this.o.watchdogIntervalMs ?? 5_000, this.leaseTtlMs / 2),
      ...(this.log ? { log: this.log } : {}),
    });
    this.failover = failover;
    let firstFill!: () => void;
    const filled = new Promise<void>((resolve) => (firstFill = resolve));
    const recovered = Promise.all([failover.start(), this.loadTracing?.()]);
    this.loopDone = recovered.catch(() => {}).then(() => this.loop(firstFill));
    this.watchdog = setInterval(() => void this.sweep().catch(() => {}), this.o.watchdogIntervalMs ?? 5_000);
    this.watchdog.unref();
    const started = recovered.then(() => filled);
    // A caller that does not await start() must not get an unhandled rejection for it.
    started.catch((err: unknown) => this.log?.({ event: "recovery-error", runId: "", error: String(err) }));
    this.started = started;
    return started;
  }

  /** Stops polling and waits for invocations in progress. */
  async stop(): Promise<void> {
    this.running = false;
    this.started = undefined;
    clearInterval(this.watchdog);
    this.wakeUp?.();
    await this.loopDone;
    await this.failover?.stop();
    this.failover = undefined;
  }

  /** Stops and closes the journal file. */
  async close(): Promise<void> {
    await this.stop();
    this.db.close();
  }

  /**
   * Resolves when the run is completed, failed or cancelled. It looks again as soon as an
   * invocation of the run in this runtime ends, and every 10 ms for an end elsewhere (another
   * worker on the journal, a cancel of a run that was not running).
   */
  async waitForRun(runId: string, options: { timeoutMs?: number } = {}): Promise<RunMeta> {
    const deadline = Date.now() + (options.timeoutMs ?? 60_000);
    for (;;) {
      // Listening before the read: an end between the two is not missed.
      const ended = this.waiters.next(runId, 10);
      let run: RunMeta | undefined;
      let past = false;
      try {
        run = await this.store.getRun(runId);
        past = Date.now() > deadline;
      } finally {
        if (!run || TERMINAL_STATUSES.has(run.status) || past) ended.cancel();
      }
      if (!run) throw new RunNotFoundError(runId);
      if (TERMINAL_STATUSES.has(run.status)) return this.client.get(runId); // values by reference read back
      if (past) throw new Error(`run "${runId}" still ${run.status} after ${options.timeoutMs ?? 60_000} ms`);
      await ended.promise;
    }
  }

  /** Executes due wakes until `stop()`; `filled` is called once the first claim has been made. */
  private async loop(filled: () => void): Promise<void> {
    const concurrency = this.o.concurrency ?? 8;
    const pool = new WakePool({
      engine: this.engine,
      wakes: this.wakes,
      clock: systemClock,
      visibilityMs: this.leaseTtlMs * 2,
      concurrency,
      invoke: {
        mayBreak: isDeadLocalOwner,
        ...(this.o.onStep ? { onStep: this.o.onStep } : {}),
      },
      ...(this.o.onInvocation ? { onResult: this.o.onInvocation } : {}),
      onError: (runId, error) => this.log?.({ event: "invocation-error", runId, error: String(error) }),
      // An invocation ended (its wake done with): whoever waits for the run looks again (waitForRun),
      // and the loop looks for due wakes at once, a slot being free.
      onFree: (runId) => {
        this.waiters.ended(runId);
        this.wakeUp?.();
      },
      isDue: async (runId) => {
        const run = await this.store.getRun(runId);
        return run !== undefined && !TERMINAL_STATUSES.has(run.status) && (run.wakeAt ?? Number.POSITIVE_INFINITY) <= Date.now();
      },
    });
    this.pool = pool;
    try {
      while (this.running) {
        // A claim is a write and the earliest visible time a read: claim only when a wake is
        // visible now. Every slot taken: a wake already due would only spin the loop; a freed
        // slot wakes it (onFree).
        let next: number | undefined;
        try {
          next = pool.size >= concurrency ? undefined : await this.wakes.nextDueAt();
          if (next !== undefined && next <= Date.now()) {
            await pool.fill();
            next = pool.size >= concurrency ? undefined : await this.wakes.nextDueAt();
          }
        } finally {
          filled();
        }
        if (!this.running) break;
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
      filled(); // stopped before the first claim: start() must not wait for ever
      this.pool = undefined;
      await pool.idle().catch(() => {});
    }
  }

  /**
   * The watchdog: finished runs past retention are deleted (a bounded batch per tick; the next
   * tick takes the rest). Dead peers' and stranded runs are the failover's (failover.ts), which
   * looks on every death, lease expiry and scan tick.
   */
  private async sweep(): Promise<void> {
    // Each purged run's values stored by reference go with it.
    for (const run of await this.store.purgeExpired(Date.now(), 100)) {
      await this.payloadStore?.deletePrefix?.(runPayloadPrefix(run.runId, run.createdAt));
      this.o.log?.({ event: "retention", runId: run.runId, createdAt: run.createdAt });
    }
  }
}
