/**
 * Values by reference (payloads.ts) inside an execution: a step result over the inline threshold
 * goes to the payload store, and a recorded reference is read when the code awaits it. A fault
 * never reaches user code: it ends the invocation (a missing or altered object fails the run, the
 * engine sees `PayloadMissingError`/`PayloadIntegrityError`; a store that cannot be reached is
 * retried with the wake, and the step runs again, as after a crash).
 */
import { Later } from "../lazy.ts";
import { loadRef } from "../payloads.ts";
import type { PayloadRef } from "../../ports.ts";
import type { ExecutionCore } from "./core.ts";
import { never } from "./never.ts";

/** The reference a value is stored under; `undefined` keeps it inline; `null`: the store failed and the invocation is aborted. */
export async function offloadValue(core: ExecutionCore, value: unknown): Promise<PayloadRef | undefined | null> {
  const payloads = core.o.payloads;
  if (!payloads) return undefined;
  try {
    return await payloads.offload(core.o.runId, core.o.runCreatedAt, value);
  } catch (err) {
    core.abort(err, false);
    return null;
  }
}

/** A recorded value to read when the code awaits it; the read holds the execution open like a running step. */
export function laterValue<T>(core: ExecutionCore, ref: PayloadRef): Later<T> {
  return new Later<T>(async () => {
    core.inflight++;
    try {
      return (await loadRef(core.o.payloads, ref)) as T;
    } catch (err) {
      core.abort(err, false);
      return never<T>();
    } finally {
      core.inflight--;
      core.checkQuiescent();
    }
  });
}
