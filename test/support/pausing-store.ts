/**
 * Interleavings on demand: a {@link JournalStore} wrapper that holds one chosen call — before it
 * is applied (`before`), or applied with its answer held back (`after`) — until the test lets it
 * go. With it a test puts another writer's whole operation between a read and a write, which is
 * where the seams of the run protocol were.
 */
import type { JournalStore } from "../../lib/ports.ts";
import { interceptStore, type StoreOp } from "./intercept-store.ts";

type Op = StoreOp;

export interface Held {
  /** Resolves once the call has arrived (and, for `after`, been applied). */
  readonly reached: Promise<unknown[]>;
  /** Lets the call go on. */
  release(): void;
  /** Makes the held call fail with `err` instead (for `after`: applied, then the answer lost). */
  fail(err: Error): void;
}

interface Trap {
  op: Op;
  when: (args: unknown[]) => boolean;
  phase: "before" | "after";
  arrived: (args: unknown[]) => void;
  gate: Promise<Error | undefined>;
  open: (err?: Error) => void;
  used: boolean;
}

export class PausingStore {
  readonly store: JournalStore;
  private readonly traps: Trap[] = [];

  constructor(inner: JournalStore) {
    const traps = this.traps;
    this.store = interceptStore(inner, async (op, args, call) => {
      const trap = traps.find((t) => !t.used && t.op === op && t.when(args));
      if (!trap) return call();
      trap.used = true;
      if (trap.phase === "before") {
        trap.arrived(args);
        const err = await trap.gate;
        if (err) throw err;
        return call();
      }
      const answer = await call();
      trap.arrived(args);
      const err = await trap.gate;
      if (err) throw err;
      return answer;
    });
  }

  /** Holds the next call of `op` that `when` accepts. */
  hold(op: Op, phase: "before" | "after", when: (args: unknown[]) => boolean = () => true): Held {
    let arrived!: (args: unknown[]) => void;
    let open!: (err?: Error) => void;
    const reached = new Promise<unknown[]>((resolve) => (arrived = resolve));
    const gate = new Promise<Error | undefined>((resolve) => (open = resolve));
    this.traps.push({ op, when, phase, arrived, gate, open, used: false });
    return { reached, release: () => open(), fail: (err) => open(err) };
  }
}
