/**
 * The step API, composed: each operation is its own module working on the execution's shared
 * core through a scope — the workflow's own, or a `step.map` item's / `step.parallel` branch's,
 * which gets the same API (every durable operation, nested as deep as the code goes).
 */
import { type ChildHost, type ChildOptions, CHILD_SIGNAL, CHILD_START_RETRY, childOutcomeSchema, runChild } from "../children.ts";
import { type AnyWorkflow, assertName, type Step, type StepRunContext, type StepRunOptions, type WaitOptions } from "../definition.ts";
import { checkMoment, parseDuration } from "../duration.ts";
import { InvalidInputError, ValueTooLargeError, WorkflowDefinitionError } from "../errors.ts";
import type { ItemStep, MapFn, MapOptions, ParallelOptions } from "../fan-out.ts";
import { assertJsonSafe, DEFAULT_MAX_INPUT_BYTES, jsonBytes } from "../json.ts";
import { lazy } from "../lazy.ts";
import { createSaga } from "../saga.ts";
import { createStepLog, journaledStepIds } from "../step-log.ts";
import { validate } from "../validate.ts";
import { zodIssues } from "../zod-issues.ts";
import { never } from "./never.ts";
import { branchLabel, fanOut } from "./fan-out.ts";
import { runStep, runStepWithId } from "./run-step.ts";
import type { Scope } from "./scope.ts";
import { sleep, waitForSignal, waitWithId } from "./waits.ts";
import { transactStep } from "./transact-step.ts";

/** The step API for `scope`; `index` is set for a map item's or a parallel branch's own step. */
export function createStep(scope: Scope, index?: number): Step {
  const core = scope.core;
  const o = core.o;
  const api = {
    runId: o.runId,
    run: (name, fn, options) => runStep(scope, name, fn, options),
    transact: (name, body, options) => transactStep(scope, name, body, options),
    sleep: (name, duration) => sleep(scope, name, (now) => now + parseDuration(duration)),
    sleepUntil: (name, until) => sleep(scope, name, (now) => checkMoment(typeof until === "number" ? until : until.getTime(), now)),
    waitForSignal: (name, options) => lazy(waitForSignal(scope, name, options as WaitOptions | undefined)),
    patched: (id: string) => {
      assertName("patch", id);
      // Old code already went past this point if the journal holds steps of this scope not reached yet.
      return scope.patched(id, () => !scope.replayingPastHere());
    },
    deprecatePatch: (id: string) => {
      assertName("patch", id);
      // The recorded answer, or the rule patched() applies (a run whose journal passed this
      // point took the old path); the rule alone decides the same way on every replay.
      if ((scope.recordedPatch(id) ?? !scope.replayingPastHere()) === false) {
        void core.nondeterminism(`patch:${id}`, `a run that took the path before patch "${id}" (the old path)`, `code in which that patch is deprecated: only the new path remains`);
      }
    },
    continueAsNew: (input: unknown) => {
      if (index !== undefined) throw new WorkflowDefinitionError("continueAsNew belongs to the workflow's own code, not to a map item or a parallel branch");
      return continueAsNew(scope, input);
    },
    map: ((name: string, items: readonly unknown[], fn: MapFn<unknown, unknown>, options: MapOptions = {}) => map(scope, name, items, fn, options)) as Step["map"],
    parallel: ((name: string, branches: Record<string, (step: ItemStep) => unknown>, options: ParallelOptions = {}) => parallel(scope, name, branches, options)) as Step["parallel"],
    saga: () => createSaga(api),
    invoke: ((name: string, workflow: AnyWorkflow, options: ChildOptions<unknown>) => runChild(childHost(scope), name, workflow, options, true)) as Step["invoke"],
    start: ((name: string, workflow: AnyWorkflow, options: ChildOptions<unknown>) => runChild(childHost(scope), name, workflow, options, false)) as Step["start"],
    now: () => new Date(scope.now()),
    random: () => scope.random(),
    uuid: () => scope.uuid(),
    log: createStepLog(journaledStepIds(o.journal), core.visited, () => core.lastReached, o.onLog),
  } satisfies Step as Step;
  if (index === undefined) return api;
  // An item's step: its index, and a clear error for code written for the map of earlier
  // versions, whose callback was the item's step body (`(item, { idempotencyKey }) => …`).
  const misuse = (field: string) => () => {
    throw new WorkflowDefinitionError(`a step.map item now gets a step API, not a step body's context (${field}): wrap the item's side effect in step.run(name, (ctx) => …)`);
  };
  return Object.defineProperties(api, {
    index: { value: index, enumerable: true },
    idempotencyKey: { get: misuse("idempotencyKey") },
    attempt: { get: misuse("attempt") },
  });
}

// ---- step.map, step.parallel ------------------------------------------------------------

async function map(scope: Scope, name: string, items: readonly unknown[], fn: MapFn<unknown, unknown>, options: MapOptions): Promise<unknown> {
  const core = scope.core;
  const mapId = scope.nextId(name);
  if (core.done || core.fatal) return never();
  const list = [...items];
  const outcomes = await fanOut(
    scope,
    mapId,
    list.map((item, i) => ({ label: String(i), run: (itemScope: Scope, index: number) => fn(item, createStep(itemScope, index) as unknown as ItemStep) })),
    options,
  );
  return options.failures === "collect" ? outcomes : outcomes.map((o) => (o.ok ? o.value : undefined));
}

async function parallel(scope: Scope, name: string, branches: Record<string, (step: ItemStep) => unknown>, options: ParallelOptions): Promise<unknown> {
  const core = scope.core;
  const id = scope.nextId(name);
  if (core.done || core.fatal) return never();
  const names = Object.keys(branches).map(branchLabel);
  const outcomes = await fanOut(
    scope,
    id,
    names.map((label) => ({ label, run: (branchScope: Scope, index: number) => (branches[label] as (step: ItemStep) => unknown)(createStep(branchScope, index) as unknown as ItemStep) })),
    options,
  );
  return Object.fromEntries(names.map((label, i) => {
    const outcome = outcomes[i];
    return [label, options.failures === "collect" ? outcome : outcome?.ok ? outcome.value : undefined];
  }));
}

// ---- step.invoke, step.start (children.ts) ------------------------------------------------

function childHost(scope: Scope): ChildHost {
  const core = scope.core;
  const o = core.o;
  return {
    runId: o.runId,
    incarnation: o.incarnation ?? 1,
    nextId: (name) => {
      const id = scope.nextId(name);
      return core.done || core.fatal ? undefined : id;
    },
    // Starting a child is idempotent: a transient failure (a throttled store, a child function
    // mid-deploy, a lost answer) is retried; the child side's refusals are not retryable.
    step: (stepId, fn) => lazy(runStepWithId(scope, stepId, fn as (ctx: StepRunContext) => Promise<unknown>, { retries: CHILD_START_RETRY } as StepRunOptions, false)),
    wait: (stepId) => lazy(waitWithId(scope, stepId, CHILD_SIGNAL, childOutcomeSchema, undefined)),
    port: o.children,
    onCancelled: (child, cancelWithParent) => {
      // Awaited by the engine before the invocation ends (a frozen Lambda sends nothing later).
      if (cancelWithParent && core.cancellation.wasDelivered && o.children) {
        const reason = `its parent was cancelled: ${core.cancellation.reason}`;
        core.track(o.children.cancel({ workflow: child.workflow, runId: child.runId, reason, parent: { runId: o.runId, waitId: child.waitId } }));
      }
    },
  } as ChildHost;
}

// ---- step.continueAsNew -------------------------------------------------------------------

function continueAsNew(scope: Scope, input: unknown): Promise<never> {
  const core = scope.core;
  const o = core.o;
  if (core.done || core.fatal) return never();
  // A cancellation requested during this incarnation is delivered here, not left behind in it
  // (and once delivered, the run is winding down: it does not go on as a new incarnation).
  if (core.cancelStops() && !o.replayOnly) {
    core.cancellation.markDelivered();
    return Promise.reject(core.cancellation.error());
  }
  const checked = validate(o.workflow.input, input);
  if (!checked.success) throw new InvalidInputError(`continueAsNew: invalid input for workflow "${o.workflow.name}"`, zodIssues(checked.error));
  assertJsonSafe(input, "continueAsNew input");
  const size = jsonBytes(input);
  if (size > DEFAULT_MAX_INPUT_BYTES) throw new ValueTooLargeError("the continueAsNew input", size, DEFAULT_MAX_INPUT_BYTES);
  core.settle({ continued: input });
  return never();
}
