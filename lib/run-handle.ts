/**
 * Typed handles on runs, as Temporal's `WorkflowHandle`: one workflow and one run id, with the
 * run's input, each signal's name and payload and the run's result checked at compile time
 * against the workflow's own types. `client.handle(flow, runId)` and the test runtime's
 * `rt.handle(flow, runId)` make them; the string-keyed `client.signal(runId, name, payload)` and
 * `client.get(runId)` stay for callers that hold only names (the CLI, the webhook).
 */
import type { AnyWorkflow, Workflow } from "./core/definition.ts";
import { type Duration, parseDuration } from "./core/duration.ts";
import { type SerializedError, WaymarkError } from "./core/errors.ts";
import type { StandardSchemaV1 } from "./core/standard-schema.ts";
import { type RunMeta, type RunStatus, TERMINAL_STATUSES } from "./ports.ts";
import type { CancelAnswer, SignalOptions, SignalReceipt, StartOptions, StartResult } from "./client.ts";

/** The input a workflow's runs start with (its input schema's output type). */
export type WorkflowInput<W> = W extends Workflow<infer I, infer _O, infer _S> ? I : never;
/** What a workflow's runs return. */
export type WorkflowResult<W> = W extends Workflow<infer _I, infer O, infer _S> ? O : never;
/** The signals a workflow declares, by name, with their schemas. */
export type WorkflowSignals<W> = W extends Workflow<infer _I, infer _O, infer S> ? S : never;
/** The names of the signals a workflow declares. */
export type SignalName<W> = keyof WorkflowSignals<W> & string;
/** What a sender passes as the payload of signal `K` (its schema's input type). */
export type SignalPayload<W, K extends SignalName<W>> = WorkflowSignals<W>[K] extends StandardSchemaV1 ? StandardSchemaV1.InferInput<WorkflowSignals<W>[K]> : never;

/**
 * A run's meta record with its result typed as the workflow returns it: `result` is there
 * once `status` is `completed`.
 *
 * @example
 * ```ts
 * const run: RunOf<typeof orderFlow> = await client.handle(orderFlow, "order-8472").get();
 * if (run.status === "completed") console.log(run.result.trackingNumber);
 * ```
 */
export type RunOf<W> = Omit<RunMeta, "status" | "result"> &
  ({ status: "completed"; result: WorkflowResult<W> } | { status: Exclude<RunStatus, "completed">; result?: undefined });

/** Options of `result()`: how long to wait for the run to end. */
export interface ResultOptions {
  /** Longest to wait for the run to end (`"30s"`, `"5m"`); then `RunNotFinishedError`. Default: no limit. */
  timeout?: Duration;
}

/**
 * One run of one workflow, typed by it.
 *
 * @example
 * ```ts
 * const order = client.handle(orderFlow, "order-8472");
 * await order.start(input);
 * await order.signal("approval", { approved: true, approver: "ana" });
 * const { trackingNumber } = await order.result();
 * ```
 */
export interface RunHandle<W extends AnyWorkflow> {
  readonly runId: string;
  readonly workflow: W;
  /** Starts the run, idempotently by run id (`client.start`). */
  start(input: WorkflowInput<W>): Promise<StartResult>;
  /**
   * Delivers a signal the workflow declares (`client.signal`); a run of another workflow under
   * this id is refused with `WorkflowMismatchError`.
   */
  signal<K extends SignalName<W>>(name: K, payload: SignalPayload<W, K>, options?: Omit<SignalOptions, "workflow">): Promise<SignalReceipt>;
  /** The run's meta record, its result typed. Throws `RunNotFoundError`, `WorkflowMismatchError`. */
  get(): Promise<RunOf<W>>;
  /**
   * The run's result once it has completed. A client waits for the run to end (polling its
   * record; `timeout` bounds the wait); the test runtime answers at once. Throws
   * `RunFailedError` when the run failed or was cancelled, `RunNotFinishedError` when it has
   * not ended (in time).
   */
  result(options?: ResultOptions): Promise<WorkflowResult<W>>;
  /** Cancels the run (`client.cancel`). */
  cancel(options?: { reason?: string }): Promise<CancelAnswer>;
}

/** What a handle calls: a client, or a runtime that also executes what each call wakes. */
export interface HandleTarget {
  start(workflow: AnyWorkflow, options: StartOptions<unknown>): Promise<StartResult>;
  signal(runId: string, name: string, payload: unknown, options: SignalOptions): Promise<SignalReceipt>;
  get(runId: string): Promise<RunMeta>;
  cancel(runId: string, options: { reason?: string }): Promise<CancelAnswer>;
  /** The run once it has ended, waiting as this target does; throws `RunNotFinishedError` otherwise. */
  ended(runId: string, options: ResultOptions): Promise<RunMeta>;
}

/** A handle over `target` (what `client.handle` and `rt.handle` return). */
export function runHandle<W extends AnyWorkflow>(workflow: W, runId: string, target: HandleTarget): RunHandle<W> {
  const typed = (run: RunMeta): RunOf<W> => {
    if (workflowName(run.workflow) !== workflow.name) throw new WorkflowMismatchError(runId, workflow.name, run.workflow);
    return run as RunOf<W>;
  };
  return Object.freeze({
    runId,
    workflow,
    start: (input: WorkflowInput<W>) => target.start(workflow, { runId, input }),
    signal: (name: string, payload: unknown, options: SignalOptions = {}) => target.signal(runId, name, payload, { ...options, workflow: workflow.name }),
    get: async () => typed(await target.get(runId)),
    result: async (options: ResultOptions = {}) => {
      // The workflow is checked before any wait: a run of another one is refused at once.
      const now = typed(await target.get(runId));
      const run = TERMINAL_STATUSES.has(now.status) ? now : typed(await target.ended(runId, options));
      if (run.status === "completed") return run.result;
      throw new RunFailedError(runId, run.status === "cancelled" ? "cancelled" : "failed", run.error ?? { name: "Error", message: `run ended ${run.status}` });
    },
    cancel: (options: { reason?: string } = {}) => target.cancel(runId, options),
  });
}

/**
 * Reads a run until it has ended (10 ms between reads, doubling to 1 s) and returns it; past
 * `timeout`, throws `RunNotFinishedError` with what the run waits for.
 */
export async function pollUntilEnded(read: () => Promise<RunMeta>, options: ResultOptions): Promise<RunMeta> {
  const deadline = options.timeout === undefined ? Number.POSITIVE_INFINITY : Date.now() + parseDuration(options.timeout);
  for (let pause = 10; ; pause = Math.min(pause * 2, 1_000)) {
    const run = await read();
    if (TERMINAL_STATUSES.has(run.status)) return run;
    const left = deadline - Date.now();
    if (left <= 0) throw new RunNotFinishedError(run.runId, run.status, run.waitingFor, `waited ${String(options.timeout)}`);
    await new Promise((resolve) => setTimeout(resolve, Math.min(pause, left)));
  }
}

/** The workflow name of a recorded workflow key (`order-flow@v2` → `order-flow`). */
export function workflowName(key: string): string {
  const at = key.indexOf("@v");
  return at < 0 ? key : key.slice(0, at);
}

/**
 * The run failed or was cancelled: `handle.result()` has no result to give. `failure` is its
 * error as journaled (for a cancellation, `CancelledError` with the reason).
 *
 * @example
 * ```ts
 * const order = client.handle(orderFlow, "order-8472");
 * try {
 *   await order.result();
 * } catch (err) {
 *   if (err instanceof RunFailedError) console.log(err.status, err.failure.message);
 * }
 * ```
 */
export class RunFailedError extends WaymarkError {
  override readonly name = "RunFailedError" as const;
  readonly retryable = false;
  constructor(
    readonly runId: string,
    readonly status: "failed" | "cancelled",
    readonly failure: SerializedError,
  ) {
    super(`run "${runId}" ${status}: ${failure.name}: ${failure.message}`);
  }
}

/**
 * The run has not ended: `handle.result()` gave up waiting (its `timeout`), or the test runtime
 * was asked before virtual time or a signal let the run finish. Retryable: ask again later.
 *
 * @example
 * ```ts
 * await expect(rt.handle(orderFlow, "o-1").result()).rejects.toBeInstanceOf(RunNotFinishedError);
 * ```
 */
export class RunNotFinishedError extends WaymarkError {
  override readonly name = "RunNotFinishedError" as const;
  readonly retryable = true;
  constructor(
    readonly runId: string,
    readonly status: RunStatus,
    readonly waitingFor: string | undefined,
    hint = "",
  ) {
    super(`run "${runId}" has not ended: it is ${status}${waitingFor ? ` (waiting for ${waitingFor})` : ""}${hint ? `; ${hint}` : ""}`);
  }
}

/**
 * A handle of one workflow met a run of another under its run id.
 *
 * @example
 * ```ts
 * await client.handle(refundFlow, "order-8472").get(); // order-8472 is an order-flow run: throws
 * ```
 */
export class WorkflowMismatchError extends WaymarkError {
  override readonly name = "WorkflowMismatchError" as const;
  readonly retryable = false;
  constructor(
    readonly runId: string,
    readonly expected: string,
    readonly actual: string,
  ) {
    super(`run "${runId}" is a run of workflow "${actual}", not "${expected}"`);
  }
}
