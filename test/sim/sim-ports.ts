/**
 * What an actor sees of the shared store and wake table: every call becomes items of the world.
 * A call is applied when the tape picks it, and its answer is delivered when the tape picks that
 * (so other actors' writes land in between, as over a network). While faults are on, a call may
 * fail before it is applied, or be applied and lose its answer — the caller then sees a transient
 * error ("throw"), or the request is sent again and the caller sees the second answer ("retry",
 * what the AWS SDK does). Reads only ever fail.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { ClaimedWake, JournalStore, PollableWakeQueue, Wake } from "../../lib/ports.ts";
import type { World } from "./world.ts";

/** What a caller sees when the store could not be reached, or its answer was lost. */
export class TransientStoreError extends Error {
  override readonly name = "TransientStoreError" as const;
  readonly retryable = true;
}

export type Fault = "none" | "fail" | "lost-throw" | "lost-retry";

/** Decides each call's fault (the scenario draws it from the tape while faults are on). */
export type FaultPicker = (actor: string, op: string, write: boolean, args: readonly unknown[]) => Fault;

/**
 * Told of every applied call, with its answer and whether the caller gets that answer (the
 * ledger watches appends and transitions); what it returns runs when the answer reaches the caller.
 */
export type ApplyObserver = (actor: string, op: string, args: unknown[], answer: unknown, answered: boolean) => (() => void) | void;

const READS = new Set(["getRun", "loadJournal", "getRecord", "listRuns", "listDueRuns", "peek", "latest", "nextDueAt", "claimDue"]);

/**
 * Runs `apply` as the world's items: applied when picked (with the fault drawn then), answered
 * when picked again.
 */
const STACKS = process.env.SIM_STACKS === "1";

function call<T>(world: World, actor: string, label: string, op: string, args: readonly unknown[], faults: FaultPicker, apply: () => Promise<T>, observe: (answer: T, answered: boolean) => (() => void) | void): Promise<T> {
  // Where the call came from, for a fault nobody handled (SIM_STACKS=1).
  const origin = STACKS ? new Error("called from").stack : undefined;
  return new Promise<T>((resolve, rawReject) => {
    const reject = (err: unknown) => {
      if (origin && err instanceof Error) err.stack = `${err.stack}\n${origin}`;
      rawReject(err);
    };
    world.add(actor, `${label} apply`, () => {
      const fault = faults(actor, op, !READS.has(op), args);
      if (fault === "fail") {
        world.add(actor, `${label} → fails before applying`, () => reject(new TransientStoreError(`${op}: unreachable (simulated)`)));
        return;
      }
      apply().then(
        (answer) => {
          const delivered = observe(answer, fault === "none");
          if (fault === "lost-throw") {
            world.add(actor, `${label} → applied, answer lost (throws)`, () => reject(new TransientStoreError(`${op}: answer lost (simulated)`)));
          } else if (fault === "lost-retry") {
            world.add(actor, `${label} → applied, answer lost, sent again`, () => {
              apply().then(
                (again) => {
                  const deliveredAgain = observe(again, true);
                  world.add(actor, `${label} → retry answered`, () => {
                    deliveredAgain?.();
                    resolve(again);
                  });
                },
                (err: unknown) => world.add(actor, `${label} → retry threw`, () => reject(err)),
              );
            });
          } else {
            world.add(actor, `${label} → answered`, () => {
              delivered?.();
              resolve(answer);
            });
          }
        },
        (err: unknown) => world.add(actor, `${label} → threw ${(err as Error)?.name}`, () => reject(err)),
      );
    });
  });
}

function describe(args: unknown[]): string {
  return args
    .map((a) => {
      if (typeof a === "string" || typeof a === "number") return String(a);
      if (a && typeof a === "object" && "key" in a) return String((a as { key: unknown }).key);
      if (a && typeof a === "object" && "status" in a) return String((a as { status: unknown }).status);
      return "…";
    })
    .join(", ");
}

/** The shared store as `actor` reaches it. */
export function actorStore(world: World, actor: string, base: JournalStore, faults: FaultPicker, observe: ApplyObserver): JournalStore {
  return new Proxy(base, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== "function" || typeof prop !== "string") return value;
      return (...args: unknown[]) => {
        // The observer runs in the caller's async context (the world applies the call later, from its own loop).
        const inCaller = AsyncLocalStorage.snapshot();
        return call(world, actor, `store.${prop}(${describe(args)})`, prop, args, faults, () => (value as (...a: unknown[]) => Promise<unknown>).apply(target, args), (answer, answered) => inCaller(() => observe(actor, prop, args, answer, answered)));
      };
    },
  });
}

/**
 * The shared wake table (the SQLite wake table's semantics: a claim hides a wake, a reschedule
 * bumps its generation), with what the scenario's faults need: drop a wake, deliver one again.
 */
export class SimWakeTable {
  private readonly wakes = new Map<string, ClaimedWake & { visibleAt: number }>();
  private generations = 0;

  schedule(wake: Wake): void {
    this.wakes.set(`${wake.runId}\u0000${wake.key}`, { runId: wake.runId, key: wake.key, at: wake.at, reason: wake.reason, visibleAt: wake.at, generation: ++this.generations });
  }

  cancel(runId: string, key: string): void {
    this.wakes.delete(`${runId}\u0000${key}`);
  }

  claimDue(now: number, limit: number, visibilityMs: number): ClaimedWake[] {
    const due = [...this.wakes.values()].filter((w) => w.visibleAt <= now).sort((a, b) => a.visibleAt - b.visibleAt || a.generation - b.generation);
    return due.slice(0, Math.max(0, limit)).map((w) => {
      w.visibleAt = now + visibilityMs;
      return { runId: w.runId, key: w.key, at: w.at, reason: w.reason, generation: w.generation };
    });
  }

  ack(wake: ClaimedWake): void {
    const id = `${wake.runId}\u0000${wake.key}`;
    if (this.wakes.get(id)?.generation === wake.generation) this.wakes.delete(id);
  }

  /** When the next wake becomes visible. */
  nextVisibleAt(): number | undefined {
    let next: number | undefined;
    for (const w of this.wakes.values()) if (next === undefined || w.visibleAt < next) next = w.visibleAt;
    return next;
  }

  /** Fault: the `index`-th wake (in key order) is lost. */
  drop(index: number): string | undefined {
    const keys = [...this.wakes.keys()].sort();
    const key = keys[index % Math.max(1, keys.length)];
    if (key === undefined) return undefined;
    this.wakes.delete(key);
    return key.replace("\u0000", "/");
  }

  /** Fault: the `index`-th wake is delivered again, now, even while a claim of it is in flight. */
  duplicate(index: number, now: number): string | undefined {
    const keys = [...this.wakes.keys()].sort();
    const key = keys[index % Math.max(1, keys.length)];
    const wake = key === undefined ? undefined : this.wakes.get(key);
    if (!wake) return undefined;
    this.schedule({ runId: wake.runId, key: wake.key, at: Math.min(wake.at, now), reason: wake.reason });
    return `${wake.runId}/${wake.key}`;
  }

  get size(): number {
    return this.wakes.size;
  }
}

/** The wake table as `actor` reaches it. */
export function actorWakes(world: World, actor: string, table: SimWakeTable, faults: FaultPicker): PollableWakeQueue {
  const op = <T>(name: string, label: string, fn: () => T): Promise<T> => call(world, actor, `wakes.${name}(${label})`, name, [], faults, async () => fn(), () => {});
  return {
    schedule: (wake) => op("schedule", `${wake.runId}, ${wake.key}@${wake.at - world.now >= 0 ? "+" : ""}${wake.at - world.now}`, () => table.schedule(wake)),
    cancel: (runId, key) => op("cancel", `${runId}, ${key}`, () => table.cancel(runId, key)),
    claimDue: (now, limit, visibilityMs) => op("claimDue", String(limit), () => table.claimDue(now, limit, visibilityMs)),
    ack: (wake) => op("ack", `${wake.runId}, ${wake.key}`, () => table.ack(wake)),
    nextDueAt: async () => table.nextVisibleAt(),
  };
}
