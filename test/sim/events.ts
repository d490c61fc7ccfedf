/**
 * The events of a story while faults are on, one drawn per step now and then: a worker killed
 * (SIGKILL) or started, frozen (SIGSTOP) or thawed (SIGCONT), the clock jumping, a wake delivered
 * twice or lost, a signal or a cancel from the client.
 */
import type { PlannedRun } from "./final-checks.ts";
import type { Ledger } from "./ledger.ts";
import type { SimClient } from "./sim-client.ts";
import type { SimWakeTable } from "./sim-ports.ts";
import type { World } from "./world.ts";

/** What an event acts on: the story's workers, as the scenario keeps them. */
export interface EventTargets {
  world: World;
  ledger: Ledger;
  table: SimWakeTable;
  plans: readonly PlannedRun[];
  client: SimClient;
  /** The workers that have not been killed. */
  live(): Array<{ id: string }>;
  kill(worker: { id: string }): void;
  startWorker(): void;
}

/** Returns the event maker: each call draws one event from the tape and makes it happen. */
export function storyEvents(t: EventTargets): () => void {
  const { world, ledger, table, plans, client } = t;
  const tape = world.tape;
  let extraSignals = 0;
  return () => {
    const kind = tape.next(8);
    const pick = <T>(list: readonly T[]): T | undefined => list[tape.next(list.length)];
    switch (kind) {
      case 0: {
        const w = pick(t.live());
        if (w) t.kill(w);
        if (t.live().length === 0) t.startWorker();
        break;
      }
      case 1:
        if (t.live().length < 3) t.startWorker();
        break;
      case 2: {
        const w = pick(t.live().filter((x) => !world.frozen.has(x.id)));
        if (w && t.live().length > 1) {
          world.frozen.add(w.id);
          ledger.interruptWorker(w.id);
          world.log(`${w.id} SIGSTOP`);
        }
        break;
      }
      case 3: {
        const w = pick(t.live().filter((x) => world.frozen.has(x.id)));
        if (w) {
          world.frozen.delete(w.id);
          world.log(`${w.id} SIGCONT`);
        }
        break;
      }
      case 4: {
        const ms = tape.between(1, 90) * 1_000;
        if (ms >= 10_000) ledger.pauseAll();
        world.jump(ms);
        world.log(`clock jumps ${ms} ms`);
        break;
      }
      case 5: {
        const what = table.duplicate(tape.next(16), world.now);
        if (what) world.log(`wake ${what} delivered again`);
        break;
      }
      case 6: {
        const what = table.drop(tape.next(16));
        if (what) world.log(`wake ${what} lost`);
        break;
      }
      default: {
        const plan = pick(plans);
        if (!plan) break;
        if (tape.next(2) === 0 && (plan.workflow === "sim-inbox" || plan.workflow === "sim-saga")) client.signal(plan, plan.signalsAt.length + extraSignals++);
        else client.cancel(plan);
      }
    }
  };
}
