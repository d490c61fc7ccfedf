/**
 * The scaffolding the fault-injecting store wrappers share: a {@link JournalStore} whose every
 * method call goes through `around(op, args, call)`, which may call the real method (`call`) as
 * often as it likes, delay it, or fail instead. Plain properties pass through.
 */
import type { JournalStore } from "../../lib/ports.ts";

/** A store method by name; `transactRecord` is the optional `TransactStore` role (step.transact). */
export type StoreOp = keyof JournalStore | "transactRecord";

export function interceptStore(inner: JournalStore, around: (op: StoreOp, args: unknown[], call: () => Promise<unknown>) => Promise<unknown>): JournalStore {
  return new Proxy(inner, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => around(prop as StoreOp, args, async () => (value as (...a: unknown[]) => Promise<unknown>).apply(target, args));
    },
  });
}
