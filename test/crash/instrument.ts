/**
 * Test-only instrumentation of step bodies, for counting executions across processes. Every
 * execution of a `step.run` body is appended to a JSON-lines file before the body runs (one
 * synchronous write, so it survives a SIGKILL), and a hook runs the moment the body returns,
 * before the engine writes the step's record. The steps of `step.map` items (their step API is
 * wrapped the same way, ids under `<mapId>[<index>]/`) and `step.saga()` compensations too. The engine itself is untouched: the workflow gets
 * the real step API with only its bodies wrapped.
 */
import { join } from "node:path";
import type { AnyWorkflow, Step, StepRunContext, StepRunOptions } from "waymark";
// Not public: the wrapped step's saga is the real one, built on the instrumented `run`.
import { createSaga } from "../../lib/core/saga.ts";
import { JsonLinesFile } from "../../functions/services/ledger-file.ts";

/** One execution of one step body. */
export interface BodyExecution {
  /** The idempotency key the body received: `<runId>/<stepId>`. */
  key: string;
  runId: string;
  stepId: string;
  attempt: number;
  worker: string;
  pid: number;
  /** Epoch ms when the body started. */
  at: number;
  /**
   * Only when the worker notes it (`WorkerSpec.noteLease`): the run's lease owner in the journal
   * file as the body started (null: nobody holds the lease).
   */
  leaseOwner?: string | null;
}

/** The executions log of one test directory, shared by every worker process. */
export class ExecutionLog {
  private readonly file: JsonLinesFile<BodyExecution>;

  constructor(dir: string) {
    this.file = new JsonLinesFile(join(dir, "executions.jsonl"));
  }

  append(entry: BodyExecution): void {
    this.file.append(entry);
  }

  read(): BodyExecution[] {
    return this.file.read();
  }

  /** Executions of one step of one run, in the order they started. */
  of(runId: string, stepId: string): BodyExecution[] {
    return this.read().filter((e) => e.runId === runId && e.stepId === stepId);
  }
}

export interface InstrumentOptions {
  log: ExecutionLog;
  worker: string;
  /** Runs right after a body returned its value, before the step's record is written. */
  afterBody?: (execution: BodyExecution) => void;
  /** Extra facts recorded with each execution, read as the body starts (before it is logged). */
  annotate?: (runId: string, stepId: string) => Partial<BodyExecution>;
  /** Runs right after an execution is logged, before the body itself runs. */
  beforeBody?: (execution: BodyExecution) => void;
}

/** The same workflow (same name, schemas and steps) with its `step.run` bodies instrumented. */
export function instrument(workflow: AnyWorkflow, o: InstrumentOptions): AnyWorkflow {
  return Object.freeze({ ...workflow, fn: (input: unknown, step: Step) => workflow.fn(input, wrapStep(step, o)) });
}

function wrapStep(step: Step, o: InstrumentOptions, prefix = ""): Step {
  // Step ids counted as the engine counts them (the n-th use of a name is `name#n`), rather than
  // parsed from the key, so that a wrong key shows up as a wrong key.
  const uses = new Map<string, number>();
  const nextId = (name: string): string => {
    const n = (uses.get(name) ?? 0) + 1;
    uses.set(name, n);
    return `${prefix}${n === 1 ? name : `${name}#${n}`}`;
  };
  const body =
    <C extends StepRunContext, T>(stepIdOf: (ctx: C) => string, fn: (ctx: C) => Promise<T> | T) =>
    async (ctx: C): Promise<T> => {
      const stepId = stepIdOf(ctx);
      const execution: BodyExecution = { key: ctx.idempotencyKey, runId: step.runId, stepId, attempt: ctx.attempt, worker: o.worker, pid: process.pid, at: Date.now() };
      if (o.annotate) Object.assign(execution, o.annotate(step.runId, stepId));
      o.log.append(execution);
      o.beforeBody?.(execution);
      const value = await fn(ctx);
      o.afterBody?.(execution);
      return value;
    };
  const run = <T>(name: string, fn: (ctx: StepRunContext) => Promise<T> | T, options?: StepRunOptions): Promise<T> => {
    const stepId = nextId(name);
    return step.run(name, body(() => stepId, fn), options);
  };
  // The engine allocates a map's id (and a child's step id) from its name like a run's: count it.
  const map = ((name: string, items: readonly unknown[], fn: (item: unknown, itemStep: Step & { index: number }) => unknown, options?: object) => {
    const mapId = nextId(name);
    return step.map(name, items, (item, itemStep) => fn(item, Object.assign(wrapStep(itemStep as unknown as Step, o, `${mapId}[${itemStep.index}]/`), { index: itemStep.index })), options);
  }) as unknown as Step["map"];
  const invoke = ((name: string, workflow: never, options: never) => (nextId(name), step.invoke(name, workflow, options))) as Step["invoke"];
  const start = ((name: string, workflow: never, options: never) => (nextId(name), step.start(name, workflow, options))) as Step["start"];
  const wrapped: Step = { ...step, run, map, invoke, start, saga: () => createSaga(wrapped) };
  return wrapped;
}
