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

/** The signal a child's end is delivered as (never a user signal: user names cannot start with `_`... by convention). */
export const CHILD_SIGNAL = "__child";

/** How the step that starts a child is retried: four retries, from half a second, within about 8 s. */
export const CHILD_START_RETRY = { attempts: 5, initialDelay: "500ms", maxDelay: "10s" } as const;

/** What the engine offers an execution to start and cancel children. */
export interface ChildPort {
  /** Creates the child run if absent (recording its parent) and wakes it; returns its run id. Idempotent. */
  start(request: ChildStart): Promise<string>;
  /** Asks a child (a run of `workflow`) to cancel: the parent was cancelled. */
  cancel(runId: string, reason: string, workflow: string): Promise<void>;
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
  /** Asks a child run of `workflow` in another deployment to cancel. Idempotent. */
  cancel(workflow: string, runId: string, reason: string): Promise<void>;
  /** Delivers a child's end to its parent's deployment (`end.parent.replyTo`). Idempotent at the parent (one signal id per child). */
  notify(end: ChildEnd): Promise<void>;
}

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
  /** Allocates a step id (`name`, `name#2`, …) and says whether the execution may go on. */
  nextId(name: string): string | undefined;
  /** Runs a journaled, unordered step. */
  step<T>(stepId: string, fn: () => Promise<T>): Promise<T>;
  /** Waits for the child's outcome signal, bound to `stepId`. */
  wait(stepId: string): Promise<WaitResult<unknown>>;
  port: ChildPort | undefined;
  /** Called when the parent's cancellation is delivered at a child wait. */
  onCancelled(childRunId: string, workflow: string, cancelWithParent: boolean): void;
}

const ID = /^[A-Za-z0-9_.:\-]{1,128}$/;

/** The default run id of the child started by `stepId`: `<parentRunId>:<stepId>` (`#` becomes `.`). */
export function childRunIdOf(parentRunId: string, stepId: string): string {
  return `${parentRunId}:${stepId.replace(/#/g, ".")}`;
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
  const childRunId = options.runId ?? childRunIdOf(host.runId, stepId);
  if (!ID.test(childRunId)) throw new InvalidInputError("invalid child run id", [{ path: "runId", message: "use 1-128 of A-Z a-z 0-9 _ . : -" }]);
  const port = host.port;
  await host.step(`${stepId}:start`, async () => {
    if (!port) throw new InvalidInputError("this runtime cannot start child runs", []);
    return port.start({ workflow: workflow.key, runId: childRunId, input: options.input, ...(wait ? { parent: { runId: host.runId, waitId: stepId } } : {}) });
  });
  if (!wait) return { runId: childRunId };
  let outcome: WaitResult<unknown>;
  try {
    outcome = await host.wait(stepId);
  } catch (err) {
    host.onCancelled(childRunId, workflow.key, options.cancelWithParent ?? true);
    throw err;
  }
  if (!outcome.received) throw new ChildFailedError(childRunId, "failed", { name: "Error", message: "no outcome" });
  const end = outcome.payload as ChildOutcome;
  if (end.status === "completed") return end.result as O;
  throw new ChildFailedError(childRunId, end.status, end.error ?? { name: "Error", message: `child ${end.status}` });
}
