import type { StandardSchemaV1 } from "./standard-schema.ts";
import { type Duration, parseDuration } from "./duration.ts";
import { WorkflowDefinitionError } from "./errors.ts";
import type { ConcurrencyOptions, DebounceOptions, RateLimitOptions } from "./flow-control.ts";
import { type RetryOptions, type RetryPolicy, resolveRetry } from "./retry.ts";

export type { ApprovalLink, LogAttributes, SignalMap, Step, StepLog, StepRunContext, StepRunOptions, WaitOptions, WaitResult } from "./step-api.ts";
export type { SignalSender } from "./records.ts";
import type { SignalMap, Step } from "./step-api.ts";

/**
 * A workflow's body: orchestration only, it receives the validated input and the `step` API and
 * awaits steps.
 */
export type WorkflowFn<I, O, S extends SignalMap> = (input: I, step: Step<S, I>) => Promise<O>;

/**
 * What `durable()` takes besides the workflow's body: its name, input schema, signals, and the
 * run-wide settings (retries, timeout, flow control, logger).
 */
export interface DurableOptions<IS extends StandardSchemaV1, S extends SignalMap> {
  /** The workflow's name; journals record it, so keep it stable across deploys. */
  name: string;
  /** Schema of the run's input, checked before a run is created. */
  input: IS;
  /** Signals the workflow accepts; payloads are checked before anything is written. */
  signals?: S;
  /** Default retry policy of this workflow's steps. */
  retries?: RetryOptions | number;
  /**
   * The workflow's version (a positive integer, default 1). A deployment may host several
   * versions of one workflow side by side: a run records the version it started on and is always
   * executed by that version's code; new runs start on the highest version hosted. A run whose
   * version no deploy hosts any more waits (reported, not failed) until one does.
   *
   * @example
   * ```ts
   * export const orderFlowV1 = durable({ name: "order-flow", input: Order }, v1Body);
   * export const orderFlowV2 = durable({ name: "order-flow", version: 2, input: Order }, v2Body);
   * createLocalRuntime({ workflows: [orderFlowV1, orderFlowV2] }); // old runs finish on v1
   * ```
   */
  version?: number;
  /**
   * A deadline for the whole run, from its start: past it the run is cancelled (reason: the
   * timeout), exactly as by `client.cancel` — compensations run, then it ends `cancelled`.
   *
   * @example
   * ```ts
   * durable({ name: "order-flow", input: Order, timeout: "7d" }, orderBody);
   * ```
   */
  timeout?: Duration;
  /**
   * Flow control per key: at most `limit` runs with the same `key(input)` execute at once,
   * across processes and containers; the others wait, status `queued` (`waitingFor:
   * queued:<workflow>:<key>`), and start first in, first out (by when they were created) as
   * slots free.
   *
   * @example
   * ```ts
   * durable({ name: "sync", input: Job, concurrency: { key: (job) => job.customerId, limit: 2 } }, syncBody);
   * ```
   */
  concurrency?: ConcurrencyOptions<StandardSchemaV1.InferOutput<IS>>;
  /**
   * At most `limit` runs of one key start within any `period`; the others are delayed (or, with
   * `onLimit: "reject"`, refused by `client.start` with `RateLimitedError`).
   *
   * @example
   * ```ts
   * durable({ name: "notify", input: Msg, rateLimit: { key: (m) => m.userId, limit: 5, period: "1m" } }, notifyBody);
   * ```
   */
  rateLimit?: RateLimitOptions<StandardSchemaV1.InferOutput<IS>>;
  /**
   * The last start of a key within `period` wins: a run waits `period` after its start, and a
   * later start of the same key within that time supersedes it (it ends `cancelled`, reason
   * `superseded by <runId>`, having run nothing).
   *
   * @example
   * ```ts
   * durable({ name: "reindex", input: Doc, debounce: { key: (d) => d.docId, period: "30s" } }, reindexBody);
   * ```
   */
  debounce?: DebounceOptions<StandardSchemaV1.InferOutput<IS>>;
}

/** A workflow definition: what `durable()` returns and every runtime takes. */
export interface Workflow<I = unknown, O = unknown, S extends SignalMap = SignalMap> {
  readonly kind: "waymark.workflow";
  readonly name: string;
  /** 1 unless given. */
  readonly version: number;
  /** The whole-run deadline (`timeout`), from the run's creation, if any. */
  readonly timeoutMs?: number;
  /** Flow control per key, if any. */
  readonly concurrency?: ConcurrencyOptions<I>;
  /** A rate limit per key, with its period in ms, if any. */
  readonly rateLimit?: RateLimitOptions<I> & { periodMs: number };
  /** Debouncing per key, with its period in ms, if any. */
  readonly debounce?: DebounceOptions<I> & { periodMs: number };
  /** What runs record as their workflow: the name for version 1, `name@v<version>` after. */
  readonly key: string;
  readonly input: StandardSchemaV1<unknown, I>;
  readonly signals: S;
  readonly retry: RetryPolicy;
  /** The workflow's body (method syntax, so any workflow fits {@link AnyWorkflow}). */
  fn(input: I, step: Step<S, I>): Promise<O>;
}

/** Any workflow, for registries. */
export type AnyWorkflow = Workflow<unknown, unknown, SignalMap>;

const NAME = /^[A-Za-z0-9_.\-/]{1,128}$/;

function checkConcurrency<I>(name: string, c: ConcurrencyOptions<I>): ConcurrencyOptions<I> {
  if (typeof c.key !== "function" || !Number.isSafeInteger(c.limit) || c.limit < 1) {
    throw new WorkflowDefinitionError(`workflow "${name}": concurrency needs a key function and a positive integer limit`);
  }
  return c;
}

/** What runs of a workflow version record: the plain name for version 1 (journals before versions say so too). */
export function workflowKey(name: string, version: number): string {
  return version === 1 ? name : `${name}@v${version}`;
}

/** Throws unless `name` is a valid workflow, step or signal name. */
export function assertName(what: string, name: string): void {
  if (typeof name !== "string" || !NAME.test(name)) {
    throw new WorkflowDefinitionError(`invalid ${what} name ${JSON.stringify(name)}: use 1-128 of A-Z a-z 0-9 _ . - /`);
  }
}

/**
 * Defines a workflow (the definition without a Lambda handler; `durable()` adds the handler).
 *
 * @example
 * ```ts
 * import { z } from "zod";
 * import { durable } from "waymark";
 *
 * export const orderFlow = durable(
 *   { name: "order-flow", input: z.object({ id: z.string(), amount: z.number() }),
 *     signals: { approval: z.object({ approved: z.boolean(), approver: z.string() }) } },
 *   async (order, step) => {
 *     const approval = await step.waitForSignal("approval", { timeout: "24h" });
 *     if (!approval.received || !approval.payload.approved) return { status: "rejected" };
 *     const chargeId = await step.run("charge", ({ idempotencyKey }) => pay(order, idempotencyKey));
 *     return { status: "charged", chargeId };
 *   },
 * );
 * ```
 */
export function defineWorkflow<IS extends StandardSchemaV1, O, S extends SignalMap = Record<never, StandardSchemaV1>>(
  options: DurableOptions<IS, S>,
  fn: WorkflowFn<StandardSchemaV1.InferOutput<IS>, O, S>,
): Workflow<StandardSchemaV1.InferOutput<IS>, O, S> {
  assertName("workflow", options.name);
  assertSchema(`workflow "${options.name}": input`, options.input);
  for (const [signal, schema] of Object.entries(options.signals ?? {})) {
    assertName("signal", signal);
    assertSchema(`workflow "${options.name}": signal "${signal}"`, schema);
    if (signal.startsWith("__")) throw new WorkflowDefinitionError(`signal "${signal}": names starting with "__" are Waymark's own (a child's end is "__child")`);
  }
  const version = options.version ?? 1;
  if (!Number.isSafeInteger(version) || version < 1) throw new WorkflowDefinitionError(`workflow "${options.name}": version must be a positive integer, not ${String(version)}`);
  return Object.freeze({
    kind: "waymark.workflow" as const,
    name: options.name,
    version,
    key: workflowKey(options.name, version),
    ...(options.timeout === undefined ? {} : { timeoutMs: parseDuration(options.timeout) }),
    ...(options.concurrency === undefined ? {} : { concurrency: checkConcurrency(options.name, options.concurrency) }),
    ...(options.debounce === undefined ? {} : { debounce: { ...options.debounce, periodMs: parseDuration(options.debounce.period) } }),
    ...(options.rateLimit === undefined ? {} : { rateLimit: { ...options.rateLimit, ...checkConcurrency(options.name, options.rateLimit), periodMs: parseDuration(options.rateLimit.period) } }),
    input: options.input as StandardSchemaV1<unknown, StandardSchemaV1.InferOutput<IS>>,
    signals: (options.signals ?? {}) as S,
    retry: resolveRetry(options.retries),
    fn,
  });
}

/** Refuses a schema that is not a Standard Schema (zod, valibot, arktype…): from JavaScript, or a missing `input`. */
function assertSchema(what: string, schema: unknown): void {
  const standard = (schema as { "~standard"?: { validate?: unknown } } | null | undefined)?.["~standard"];
  if (typeof standard?.validate !== "function") {
    throw new WorkflowDefinitionError(`${what} must be a Standard Schema such as a zod schema (got ${schema === undefined ? "nothing" : typeof schema}); a workflow that takes no input can use z.object({})`);
  }
}
