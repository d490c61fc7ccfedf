import { type CancelAnswer, type SignalOptions, type SignalReceipt, type StartOptions, type StartResult, Client, type HistoryEntry } from "../client.ts";
import type { AnyWorkflow } from "../core/definition.ts";
import { type Duration, parseDuration } from "../core/duration.ts";
import { Engine, type InvocationResult } from "../core/engine.ts";
import type { StepEvent } from "../core/execution.ts";
import type { JournalLimits } from "../core/journal-limits.ts";
import { createRegistry } from "../core/registry.ts";
import { type RunMeta, TERMINAL_STATUSES } from "../ports.ts";
import { type RunHandle, RunNotFinishedError, runHandle, type WorkflowInput } from "../run-handle.ts";
import { drainDueWakes } from "../wake-loop.ts";
import { createApprovalLinks, type ApprovalLinksOptions } from "../http/tokens.ts";
import { linksWithoutSecret, SECRET_HINTS } from "../http/no-links.ts";
import { MemoryJournalStore } from "./memory-store.ts";
import type { MemoryTables } from "./memory-tables.ts";
import type { TableKeys } from "../core/transact/emulate.ts";
import { MemoryPayloadStore } from "./memory-payloads.ts";
import type { PayloadOptions } from "../core/payloads.ts";
import { MemoryWakeQueue } from "./memory-wakes.ts";
import { VirtualClock } from "./virtual-clock.ts";

/**
 * Options of `createTestRuntime`: the workflows, where virtual time starts, the webhook (its
 * secret), payloads and journal limits.
 */
export interface TestRuntimeOptions {
  workflows: ReadonlyArray<AnyWorkflow>;
  /** Where virtual time starts. Default 2026-01-01T00:00:00Z. */
  start?: Date;
  /** The webhook secret (and public base URL) with which `waitForSignal({ notify })` mints approval links. */
  webhook?: ApprovalLinksOptions;
  /**
   * Store large values by reference: `true` for a {@link MemoryPayloadStore} with the default
   * thresholds, or thresholds of your own (and a store, if not the memory one).
   */
  payloads?: boolean | (Omit<PayloadOptions, "store"> & { store?: PayloadOptions["store"] });
  /**
   * How long one incarnation's journal may grow before a warning, and before the run fails
   * with `JournalLimitError` (the engine's `journalLimits`; defaults: warn at 5,000 records or
   * 4 MiB, fail past 50,000 records or 32 MiB).
   */
  journalLimits?: Partial<JournalLimits>;
  /**
   * Emulated user tables for `step.transact`, by name, with their key attributes
   * (`{ stock: ["sku"], ledger: ["pk", "sk"] }`); read and seed them through `rt.tables`.
   */
  tables?: TableKeys;
}


/**
 * The whole engine on an in-memory journal and a virtual clock: start a run, signal it, skip a
 * day, and assert on the result and the history, in milliseconds.
 *
 * @example
 * ```ts
 * const rt = createTestRuntime({ workflows: [orderFlow] });
 * const order = rt.handle(orderFlow, "o-1");
 * await order.start(input); // runs until the run waits
 * await order.signal("approval", { approved: true, approver: "ana" });
 * await rt.advance("24h");
 * expect(await order.result()).toMatchObject({ status: "shipped" });
 * ```
 */
export function createTestRuntime(options: TestRuntimeOptions): TestRuntime {
  return new TestRuntime(options);
}

/**
 * The test runtime: the engine on an in-memory journal and a virtual clock; `start`, `signal` and
 * `cancel` also run what they wake (`createTestRuntime` makes one).
 *
 * @example
 * ```ts
 * const rt = createTestRuntime({ workflows: [orderFlow] });
 * await rt.handle(orderFlow, "o-1").start(order);
 * await rt.advance("24h"); // the wait times out
 * ```
 */
export class TestRuntime {
  readonly clock: VirtualClock;
  readonly store: MemoryJournalStore;
  /** The emulated user tables `step.transact` writes: `rt.tables.get("stock", { sku })`, `rt.tables.put(…)`. */
  readonly tables: MemoryTables;
  readonly wakes = new MemoryWakeQueue();
  readonly client: Client;
  readonly engine: Engine;
  /** Every step event, replays included, in order. */
  readonly events: StepEvent[] = [];
  /** Every invocation's result, in order. */
  readonly invocations: Array<{ runId: string; result: InvocationResult }> = [];
  /** The payload store values by reference go to, when `payloads` is on. */
  readonly payloads: PayloadOptions["store"] | undefined;

  constructor(options: TestRuntimeOptions) {
    this.clock = new VirtualClock(options.start?.getTime());
    this.store = new MemoryJournalStore(options.tables ? { tables: options.tables } : {});
    this.tables = this.store.tables;
    const workflows = createRegistry(options.workflows);
    const p = options.payloads === true ? {} : options.payloads || undefined;
    const payloads = p ? { ...p, store: p.store ?? new MemoryPayloadStore() } : undefined;
    this.payloads = payloads?.store;
    const ports = { store: this.store, wakes: this.wakes, clock: this.clock, workflows, ...(payloads ? { payloads } : {}) };
    this.client = new Client(ports);
    this.engine = new Engine({
      ...ports,
      owner: "test-runtime",
      leaseTtlMs: 60_000,
      links: options.webhook ? createApprovalLinks(options.webhook) : linksWithoutSecret(SECRET_HINTS.test),
      ...(options.journalLimits ? { journalLimits: options.journalLimits } : {}),
    });
  }

  /**
   * A typed handle on one run: `start`, `signal` and `cancel` also run what they wake, and
   * `result()` answers at once (virtual time moves only with {@link TestRuntime.advance}):
   * the result of a completed run, `RunFailedError` for a failed or cancelled one,
   * `RunNotFinishedError` for one still waiting.
   *
   * @example
   * ```ts
   * const order = rt.handle(orderFlow, "o-1");
   * await order.start(input);
   * await rt.advance("24h"); // nobody approved
   * expect(await order.result()).toMatchObject({ status: "expired" });
   * ```
   */
  handle<W extends AnyWorkflow>(workflow: W, runId: string): RunHandle<W> {
    return runHandle(workflow, runId, {
      start: (w, o) => this.start(w, o),
      signal: (id, name, payload, o) => this.signal(id, name, payload, o),
      get: (id) => this.get(id),
      cancel: (id, o) => this.cancel(id, o),
      ended: async (id) => {
        await this.settle();
        const run = await this.get(id);
        if (!TERMINAL_STATUSES.has(run.status)) throw new RunNotFinishedError(id, run.status, run.waitingFor, "move virtual time with rt.advance(…), or signal it");
        return run;
      },
    });
  }

  /** Starts a run and runs it until it finishes or suspends; given the workflow, the input is type-checked. */
  async start<W extends AnyWorkflow | string>(workflow: W, options: StartOptions<W extends AnyWorkflow ? WorkflowInput<W> : unknown>): Promise<StartResult> {
    const started = await this.client.start<AnyWorkflow | string>(workflow, options);
    await this.settle();
    return started;
  }

  /** Delivers a signal by name and runs what it woke (typed: {@link TestRuntime.handle}). */
  async signal(runId: string, name: string, payload: unknown, options?: SignalOptions): Promise<SignalReceipt> {
    const receipt = await this.client.signal(runId, name, payload, options);
    await this.settle();
    return receipt;
  }

  /** Cancels a run and runs what that wakes (its compensations). */
  async cancel(runId: string, options: { reason?: string } = {}): Promise<CancelAnswer> {
    const answer = await this.client.cancel(runId, options);
    await this.settle();
    return answer;
  }

  /** Moves virtual time forward, firing every wake that falls due on the way, in order. */
  async advance(duration: Duration): Promise<void> {
    const target = this.clock.now() + parseDuration(duration);
    for (;;) {
      await this.settle();
      const next = await this.wakes.nextDueAt();
      if (next === undefined || next > target) break;
      this.clock.setTo(next);
    }
    this.clock.setTo(target);
    await this.settle();
  }

  /** Runs every wake due now, and the wakes those invocations make due now, until none are. */
  async settle(): Promise<void> {
    await drainDueWakes({
      engine: this.engine,
      wakes: this.wakes,
      clock: this.clock,
      visibilityMs: 60_000,
      concurrency: 16,
      invoke: { onStep: (event) => this.events.push(event) },
      onResult: (runId, result) => this.invocations.push({ runId, result }),
      onError: (_runId, error) => {
        throw error;
      },
    });
  }

  async get(runId: string): Promise<RunMeta> {
    return this.client.get(runId);
  }

  async history(runId: string): Promise<HistoryEntry[]> {
    return (await this.client.history(runId)).entries;
  }
}
