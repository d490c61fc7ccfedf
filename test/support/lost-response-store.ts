/**
 * Fault injection: a {@link JournalStore} wrapper that applies a write and then loses its
 * response. Two shapes of the same fault:
 *
 *   "retry"  the write is applied, its answer is lost, and the request is sent again (what the
 *            AWS SDK does on a timeout or a reset connection); the caller sees the retry's answer.
 *   "throw"  the write is applied, its answer is lost, and the caller sees a transient error.
 *
 * Faults are armed per operation with a predicate on the call's arguments, and fire once each.
 */
import type { JournalStore } from "../../lib/ports.ts";
import { interceptStore, type StoreOp } from "./intercept-store.ts";

export type LostResponseMode = "retry" | "throw";
type Op = StoreOp;

interface Fault {
  op: Op;
  when: (args: unknown[]) => boolean;
  mode: LostResponseMode;
  fired: boolean;
}

/** The error a caller sees in "throw" mode: what a socket reset looks like through the SDK. */
export class LostResponseError extends Error {
  override readonly name = "TimeoutError";
  constructor(op: string) {
    super(`injected: ${op} was applied but its response was lost`);
  }
}

export class LostResponseStore {
  private readonly faults: Fault[] = [];
  /** Every fault that fired, as `op` names, in order. */
  readonly fired: string[] = [];
  readonly store: JournalStore;

  constructor(inner: JournalStore) {
    const faults = this.faults;
    const fired = this.fired;
    this.store = interceptStore(inner, async (op, args, call) => {
      const fault = faults.find((f) => !f.fired && f.op === op && f.when(args));
      if (!fault) return call();
      fault.fired = true;
      fired.push(op);
      await call(); // applied; this answer never reaches the caller
      if (fault.mode === "throw") throw new LostResponseError(op);
      return call();
    });
  }

  /** Arms one lost response for the next call of `op` that `when` accepts. */
  lose(op: Op, when: (args: unknown[]) => boolean = () => true, mode: LostResponseMode = "retry"): this {
    this.faults.push({ op, when, mode, fired: false });
    return this;
  }
}
