/** What the engine is given and what one invocation ends in (engine.ts). */
import type { AttemptHook } from "./execution.ts";
import type { SerializedError } from "./errors.ts";
import type { RemoteChildren } from "./children.ts";
import type { JournalLimits } from "./journal-limits.ts";
import type { PayloadOptions } from "./payloads.ts";
import type { ApprovalLinks, Clock, JournalStore, Lease, Timers, WakeQueue } from "../ports.ts";
import type { Registry } from "./registry.ts";
import type { StepEvent } from "./execution.ts";

/**
 * How one invocation of a run ended: completed, failed, suspended (with its wake time and what it
 * waits for), cancelled, continued, or given up.
 */
export type InvocationResult =
  | { status: "completed"; result: unknown }
  | { status: "failed"; error: SerializedError }
  | { status: "suspended"; wakeAt: number | undefined; waitingFor: string }
  /** Another invocation holds the lease; it will finish the work. */
  | { status: "busy" }
  /**
   * The wake came for a suspended run that is not due (`InvokeOptions.wakeAt`): a duplicate, or a
   * stale wake of an earlier wait. Nothing was done; the run's own wake comes at `wakeAt` (or a
   * signal's, when it has none).
   */
  | { status: "not-due"; wakeAt: number | undefined }
  | { status: "missing" }
  /** The run had already finished; nothing to do. */
  | { status: "finished" }
  /** The lease was lost mid-invocation (expired, taken, lost an append race, or the run was cancelled). */
  | { status: "lost-lease" }
  /**
   * The invocation passed its deadline with work still in flight (a step body that does not
   * return, a Lambda about to time out): it gave up the run, which is woken again once its lease
   * lapses, so one stuck run never holds a worker or a batch.
   */
  | { status: "abandoned"; wakeAt: number }
  /** Cancelled (`client.cancel`, or the run's timeout), after the workflow's compensations. */
  | { status: "cancelled"; reason: string }
  /** `step.continueAsNew`: the run starts afresh as this incarnation, woken at once. */
  | { status: "continued"; incarnation: number }
  /** Flow control: no slot of its key (or no room in its rate window) for it now; it waits, status `queued`, woken when one is handed to it. */
  | { status: "queued"; scope: string }
  /** The run's workflow is not hosted by this deployment: it waits (backing off) for one that does. */
  | { status: "unhosted"; workflow: string; wakeAt: number };

/** A structured log line. */
export type LogEntry = Record<string, unknown> & { event: string; runId: string };

/**
 * What the host wraps around the engine's work (tracing). Both are optional; each must call
 * `body` once and return what it returns.
 */
export interface EngineHooks {
  /** Around one invocation of a run, from taking the lease to its outcome. */
  invocation?: <T>(runId: string, options: InvokeOptions, body: () => Promise<T>) => Promise<T>;
  /** Around one attempt of a step body. */
  attempt?: AttemptHook;
}

/**
 * What an `Engine` is built from: the store, wakes and clock ports, the hosted workflows, and its
 * tuning (lease TTL, limits, payloads, hooks).
 */
export interface EngineOptions {
  store: JournalStore;
  wakes: WakeQueue;
  clock: Clock;
  workflows: Registry;
  /** Heartbeats, deadlines, step timeouts, quiescence checks. Default: Node's timers (a simulator passes its own). */
  timers?: Timers;
  /** Identifies this process in leases (unique per process); each invocation adds a suffix of its own. */
  owner: string;
  /** Lease length; renewed at a third of it while the invocation runs. Default 30 s. */
  leaseTtlMs?: number;
  /** Invocations one run may take before it fails (a guard against runaway self-wakes). Default 10,000. */
  maxInvocations?: number;
  /**
   * How often, at most, a step's journal write also looks for a cancellation requested while the
   * invocation runs (ms since it last looked). 0 (the default) looks on every write, which is
   * free on the embedded and memory stores: a cancel that arrives while a body runs is seen
   * before the next step starts. DynamoDB's look is a read beside the write: the AWS runtime
   * looks once 250 ms have passed, so no forward step starts more than that after a cancel.
   */
  cancelProbeMs?: number;
  /** Longest one invocation may hold a run before it gives it up (`abandoned`). Default 15 minutes. */
  maxInvocationMs?: number;
  /** Largest step result, as JSON bytes, the journal takes. Default 256 KiB. */
  maxValueBytes?: number;
  /** Mints approval links for `waitForSignal({ notify })`. */
  links?: ApprovalLinks;
  /**
   * Values over `inlineBytes` go to this store by reference, up to `maxBytes` (which then replaces
   * `maxValueBytes`). Give the client the same options.
   */
  payloads?: PayloadOptions;
  /** Children hosted by other deployments, and parents in them (the AWS runtime's `LambdaChildren`). */
  remote?: RemoteChildren;
  /**
   * How long one incarnation's journal may grow: past `warn*` a warning is logged; past `max*`
   * the run fails with `JournalLimitError` (end batches of work with `step.continueAsNew`).
   * Defaults: warn at 5,000 records or 4 MiB, fail past 50,000 records or 32 MiB.
   */
  journalLimits?: Partial<JournalLimits>;
  /**
   * Structured lines: `invocation` (with the run's counts: steps executed and replayed,
   * retries, invocations used of the budget, and the run's duration once it ends), `step` (new
   * steps only), `log` (`step.log`, once), `abandoned`, `unhosted`.
   */
  log?: (entry: LogEntry) => void;
  hooks?: EngineHooks;
}

/**
 * Per-invocation options of `Engine.invoke`: when to checkpoint, when to give the run up, whose
 * lease may be broken, a per-step callback, and the waking invocation's `traceparent`.
 */
export interface InvokeOptions {
  /** Checkpoint instead of starting another step (e.g. Lambda time running out). */
  shouldYield?: () => boolean;
  /** Give the run up at this time (epoch ms, the engine's clock) if it has not ended by then. */
  deadline?: number;
  /** Decides whether a held lease may be taken over (e.g. its local owner process is dead). */
  mayBreak?: (lease: Lease) => boolean;
  onStep?: (event: StepEvent) => void;
  /** W3C `traceparent` of what caused this invocation (a wake's), for the invocation hook. */
  traceparent?: string;
  /**
   * The time the wake that causes this invocation was meant for (its `at`). Given, a suspended run
   * that is due neither by then nor by now is not invoked: `not-due`, one conditional write and
   * nothing changed (run/leases.ts). The SQS transport gives it; a duplicate delivery of a wake
   * already handled then costs one request, not an invocation that replays and re-suspends.
   */
  wakeAt?: number;
}

