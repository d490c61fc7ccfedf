/**
 * One execution of a workflow's code against its journal, composed: the shared core
 * (execution/core.ts: records, blocking, the end) and one module per step kind (run-step,
 * waits, fan-out, children), put together as the step API by execution/step.ts. The engine
 * drives it: `run()` resolves to how it ended; `stop()` ends it from outside.
 */
import { ExecutionCore } from "./execution/core.ts";
import { Scope } from "./execution/scope.ts";
import { createStep } from "./execution/step.ts";
import type { ExecutionOptions, Outcome } from "./execution-types.ts";

export type { AttemptHook, AttemptInfo, Blocker, ExecutionOptions, Outcome, StepEvent, StepLogLine } from "./execution-types.ts";
export { isTooLargeForStore } from "./execution/core.ts";

export class Execution {
  private readonly core: ExecutionCore;

  constructor(o: ExecutionOptions) {
    this.core = new ExecutionCore(o);
  }

  /** Runs the workflow's code from the top; resolves once the execution has ended. */
  run(): Promise<Outcome> {
    const core = this.core;
    const step = createStep(new Scope(core, ""));
    return core.start(() => core.o.workflow.fn(core.o.input, step));
  }

  /** Writes the records of the waits first met here (at suspension); false when another invocation got there first. */
  persistBlockers(): Promise<boolean> {
    return this.core.persistBlockers();
  }

  /** Waits for effects on other runs (a child's cancellation); throws the first failure. */
  sideEffectsSettled(): Promise<void> {
    return this.core.sideEffectsSettled();
  }

  /** Wake keys made pointless by this execution (a wait resolved before its timeout). */
  get cancelledWakes(): readonly string[] {
    return this.core.cancelledWakes;
  }

  /**
   * Steps, reads by reference and user step functions still running: after an abort (or a step
   * stopped by its timeout or a cancellation), a function may outlive its step and the execution.
   */
  get bodiesInFlight(): number {
    return this.core.inflight + this.core.bodies.count;
  }

  /** Resolves true once no user step function runs any more, or false after `ms`. */
  bodiesSettled(ms: number): Promise<boolean> {
    return this.core.bodies.settled(ms);
  }

  /** A cancellation noticed while running (the heartbeat read it): running step bodies are aborted. */
  requestCancel(reason: string): void {
    this.core.cancellation.request(reason);
  }

  /** Ends the execution from outside (the lease lost, the deadline passed): no new step starts. */
  stop(error: unknown): void {
    this.core.abort(error, true);
  }
}
