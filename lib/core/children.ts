/**
 * Child workflows: `step.invoke` starts a run of another workflow and waits for its end;
 * `step.start` starts one and goes on. A child is a run like any other, with an id derived from
 * the parent's run and step (unless given), started by a journaled step (so a retry or a replay
 * never starts a second one) that also records who its parent is in the child's journal. When the
 * child ends, the engine delivers its outcome to the parent as a signal (`__child`, bound to the
 * parent's wait), which wakes the parent: no polling.
 */
import type { Workflow, SignalMap, WaitResult } from "./definition.ts";
import { ChildFailedError, InvalidInputError, type SerializedError } from "./errors.ts";
import type { StandardSchemaV1 } from "./standard-schema.ts";
import { RUN_ID, RUN_ID_RULE } from "./run-id.ts";

/** The signal a child's end is delivered as (never a user signal: user names cannot start with `_`... by convention). */
export const CHILD_SIGNAL = "__child";

/**
 * How the step that starts a child is retried: nine retries from 1 s, doubling up to a minute,
 * about five minutes in all — a throttled store or a child function mid-deploy outlasts a few
 * seconds. The start is idempotent; the child side's refusals are not retryable.
 */
export const CHILD_START_RETRY = { attempts: 10, initialDelay: "1s", maxDelay: "1m" } as const;

/** Largest child end, as JSON bytes, that crosses deployments (one SQS message, less its envelope). */
export const CHILD_END_MAX_BYTES = 256 * 1024 - 4 * 1024;

/** What the engine offers an execution to start and cancel children. */
export interface ChildPort {
  /** Creates the child run if absent (recording its parent) and wakes it; returns its run id. Idempotent. */
  start(request: ChildStart): Promise<string>;
  /** Asks a child to cancel: its parent was cancelled. */
  cancel(request: ChildCancel): Promise<void>;
}

/** Where a child's end goes back to: the parent run, the wait its end resolves, and (across deployments) the parent's wake queue. */
export interface ParentRef {
  runId: string;
  waitId: string;
  /** The parent's incarnation, when past its first (continueAsNew). */
  incarnation?: number;
  /** The parent deployment's wake queue, when the child runs in another deployment. */
  replyTo?: string;
}

/** A child's end on its way to a parent in another deployment. */
export interface ChildEnd {
  parent: ParentRef;
  childRunId: string;
  outcome: ChildOutcome;
}

/**
 * Children hosted by another deployment (another `DurableFunction`): how a parent starts and
 * cancels them, and how a child's end gets back to its parent. The core only sees this port; the
 * AWS runtime implements it with a Lambda invocation of the child's function (its direct start)
 * and a message on the parent's own wake queue (lib/aws/remote-children.ts).
 */
export interface RemoteChildren {
  /**
   * Creates the child run if absent (recording its parent and the parent's `replyTo`) in the
   * deployment that hosts `workflow`, and wakes it. Idempotent. Throws `UnknownWorkflowError`
   * when no deployment this one may start hosts the workflow, and the child side's own
   * non-retryable errors (`InvalidInputError`, `RunConflictError`) as themselves.
   */
  start(request: ChildStart): Promise<void>;
  /** Asks a child run in another deployment to cancel, if its parent record names `request.parent`. Idempotent. */
  cancel(request: ChildCancel): Promise<void>;
  /** Delivers a child's end to its parent's deployment (`end.parent.replyTo`). Idempotent at the parent (one signal id per child). */
  notify(end: ChildEnd): Promise<void>;
}

/** A parent's request that its child cancel. */
export interface ChildCancel {
  /** The child's workflow key (where it is hosted). */
  workflow: string;
  runId: string;
  reason: string;
  /** Whose child it is: a run whose parent record names another parent is not cancelled. */
  parent: ParentRef;
}

/** A child run as its parent starts it: the workflow key, the run id, the input and the parent. */
export interface ChildStart {
  /** The child's workflow key (`name`, or `name@v<n>`). */
  workflow: string;
  runId: string;
  input: unknown;
  /** Set for `step.invoke`: the wait in the parent that the child's end resolves. */
  parent?: ParentRef;
}

/** A child's end, as delivered to its parent. */
export interface ChildOutcome {
  status: "completed" | "failed" | "cancelled";
  result?: unknown;
  error?: SerializedError;
}

/**
 * What `step.invoke` and `step.start` take for the child run: its input, and optionally its run id
 * and whether a parent's cancel reaches it.
 */
export interface ChildOptions<I> {
  input: I;
  /** The child's run id. Default: derived from the parent's run id and this step's id. */
  runId?: string;
  /** Cancel the child when the parent's cancellation is delivered while it waits for it. Default true. */
  cancelWithParent?: boolean;
}

/** The pieces of an execution that children need (execution.ts provides them). */
export interface ChildHost {
  runId: string;
  /** The parent's incarnation (continueAsNew): part of its children's default ids past the first. */
  incarnation: number;
  /** Allocates a step id (`name`, `name#2`, …) and says whether the execution may go on. */
  nextId(name: string): string | undefined;
  /** Runs a journaled, unordered step. */
  step<T>(stepId: string, fn: () => Promise<T>): Promise<T>;
  /** Waits for the child's outcome signal, bound to `stepId`. */
  wait(stepId: string): Promise<WaitResult<unknown>>;
  port: ChildPort | undefined;
  /** Called when the parent's cancellation is delivered at a child wait. */
  onCancelled(child: { runId: string; workflow: string; waitId: string }, cancelWithParent: boolean): void;
}


/**
 * The default run id of the child started by `stepId`: `<parentRunId>:<stepId>` (`#` becomes
 * `.`; a map item's scope `items[3]/` becomes `items:3:`), and `<parentRunId>:i<k>:<stepId>` in
 * the parent's incarnation k > 1, so that each incarnation's `step.invoke("pay", …)` starts a
 * child of its own.
 */
export function childRunIdOf(parentRunId: string, stepId: string, incarnation = 1): string {
  // Run ids hold no `#`, `/`, `[` or `]`: `pay#2` → `pay.2`, `items[3]/pay` → `items:3:pay`.
  const id = stepId.replace(/#/g, ".").replace(/\]\//g, ":").replace(/[[/]/g, ":").replace(/\]/g, "");
  return `${parentRunId}:${incarnation > 1 ? `i${incarnation}:` : ""}${id}`;
}

/** Accepts a child outcome as the engine delivers it. */
export const childOutcomeSchema: StandardSchemaV1<ChildOutcome> = {
  "~standard": {
    version: 1,
    vendor: "waymark",
    validate: (value) => {
      const v = value as Partial<ChildOutcome> | null;
      return typeof v === "object" && v !== null && (v.status === "completed" || v.status === "failed" || v.status === "cancelled")
        ? { value: v as ChildOutcome }
        : { issues: [{ message: "not a child outcome" }] };
    },
  },
};

/**
 * `step.invoke` (wait: true) and `step.start` (wait: false).
 *
 * @example
 * ```ts
 * const receipt = await step.invoke("pay", paymentFlow, { input: { orderId, amount } });
 * const { runId } = await step.start("audit", auditFlow, { input: { orderId } });
 * ```
 */
export async function runChild<I, O>(host: ChildHost, name: string, workflow: Workflow<I, O, SignalMap>, options: ChildOptions<I>, wait: boolean): Promise<O | { runId: string }> {
  const stepId = host.nextId(name);
  if (stepId === undefined) return new Promise(() => {});
  const wanted = options.runId ?? childRunIdOf(host.runId, stepId, host.incarnation);
  if (!RUN_ID.test(wanted)) throw new InvalidInputError("invalid child run id", [{ path: "runId", message: RUN_ID_RULE }]);
  const port = host.port;
  const started = await host.step(`${stepId}:start`, async () => {
    if (!port) throw new InvalidInputError("this runtime cannot start child runs", []);
    return port.start({ workflow: workflow.key, runId: wanted, input: options.input, ...(wait ? { parent: { runId: host.runId, waitId: stepId } } : {}) });
  });
  // The id the start recorded is the child's (a journal of an earlier version may have used another default).
  const childRunId = typeof started === "string" ? started : wanted;
  if (!wait) return { runId: childRunId };
  let outcome: WaitResult<unknown>;
  try {
    outcome = await host.wait(stepId);
  } catch (err) {
    host.onCancelled({ runId: childRunId, workflow: workflow.key, waitId: stepId }, options.cancelWithParent ?? true);
    throw err;
  }
  if (!outcome.received) throw new ChildFailedError(childRunId, "failed", { name: "Error", message: "no outcome" });
  const end = outcome.payload as ChildOutcome;
  if (end.status === "completed") return end.result as O;
  throw new ChildFailedError(childRunId, end.status, end.error ?? { name: "Error", message: `child ${end.status}` });
}
