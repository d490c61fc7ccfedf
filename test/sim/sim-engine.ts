/**
 * The engine as the simulator runs it: each invocation is an execution of the ledger, and runs
 * in an async context that says so (`inExec`), so the store observer charges what it learns to
 * the invocation that asked.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { Engine, type EngineOptions, type InvocationResult, type InvokeOptions } from "../../lib/core/engine.ts";
import type { Exec, Ledger } from "./ledger.ts";

/**
 * The ledger's execution that engine code runs for (set around each invocation, carried by its
 * promises): the store calls and caught cancellations of an invocation that has ended, yet whose
 * step body still runs and is recorded afterwards, are told apart from those of the next
 * invocation of the same run in the same worker.
 */
export const inExec = new AsyncLocalStorage<Exec>();

export class SimEngine extends Engine {
  constructor(
    options: EngineOptions,
    private readonly ledger: Ledger,
    private readonly worker: string,
  ) {
    super(options);
  }

  override async invoke(runId: string, options?: InvokeOptions): Promise<InvocationResult> {
    const exec = this.ledger.beginExec(this.worker, runId);
    return inExec.run(exec, async () => {
      try {
        const result = await super.invoke(runId, options);
        this.ledger.endExec(exec, result.status);
        return result;
      } catch (err) {
        this.ledger.endExec(exec, `threw ${(err as Error)?.name}`);
        throw err;
      }
    });
  }
}
