/**
 * The flow-control story (`npm run sim -- --story flow`): the plain story's world, with runs that
 * all share a concurrency key and are often cancelled while they wait, and faults aimed at
 * flow-control admission. A plain soak seldom has an invocation stop between the release that
 * queues its run and its enqueue, or a canceller stop between freeing a slot and handing it on;
 * here a worker (or the client) that has just had a flow-control call applied — a queued
 * release, an enqueue, a slot taken or freed, a queue entry peeked or taken, a queued run's
 * cancel — is often frozen there (SIGSTOP, before the answer reaches it) and thawed up to 90 s
 * later, past its lease; and those calls fail or lose their answers more often.
 *
 * `--story flow-hard` is the same story pressed harder: freezes three times as often, twice the
 * faults, up to eight runs.
 *
 * The story is chosen on the command line, not by the tape: every seed of the plain story keeps
 * its meaning. Within it, 0 is still the plain choice (no freeze, no fault, the first key).
 */
import type { PlannedRun } from "./final-checks.ts";
import type { Ledger } from "./ledger.ts";
import type { Tape } from "./tape.ts";
import type { World } from "./world.ts";

export type Story = "plain" | "flow" | "flow-hard";

export const STORIES: readonly Story[] = ["plain", "flow", "flow-hard"];

/** How hard a flow story presses: the chance that a flow-control call fails or loses its answer, that its caller freezes once it is applied; the most runs. */
export interface FlowPressure {
  fault: number;
  pause: number;
  maxRuns: number;
}

/** The story's pressure on flow control (none for the plain story). */
export function flowPressure(story: Story): FlowPressure | undefined {
  if (story === "flow") return { fault: 0.12, pause: 0.1, maxRuns: 5 };
  if (story === "flow-hard") return { fault: 0.25, pause: 0.3, maxRuns: 8 };
  return undefined;
}

const FLOW_OPS = new Set(["takeSlot", "freeSlot", "slots", "enqueue", "dequeue", "peek"]);

/** Whether a store call is flow control's: a slot or queue call, a release that queues the run, the end of a queued run's cancel. */
export function isFlowCall(actor: string, op: string, args: readonly unknown[]): boolean {
  if (FLOW_OPS.has(op)) return true;
  const update = args[op === "releaseLease" ? 2 : 1] as { status?: unknown } | undefined;
  if (op === "releaseLease") return update?.status === "queued";
  return op === "finishRun" && actor === "client" && update?.status === "cancelled";
}

/** The chance of a fault for a call (outside flow control, or in the plain story: the intensity's). */
export function faultChance(pressure: FlowPressure | undefined, plain: number, flowCall: boolean): number {
  return pressure && flowCall ? Math.max(plain, pressure.fault) : plain;
}

/**
 * After a flow-control call of `actor` applied: with the tape's say, the actor freezes before its
 * answer reaches it (its open step bodies count as interrupted), and a timer of the scheduler's
 * thaws it 1 to 90 s later (unless it was thawed, or killed, before). A worker frozen just after
 * the release that queued its run is often joined by the client's cancel of that run, sent as it
 * thaws: the cancel and the frozen invocation's enqueue then interleave as the tape says.
 */
export function flowFreezer(world: World, ledger: Ledger, pressure: FlowPressure, cancel: (runId: string) => void): (actor: string, op: string, args: readonly unknown[]) => void {
  const tape = world.tape;
  return (actor, op, args) => {
    if (actor === "watchdog" || world.frozen.has(actor) || world.dead.has(actor)) return;
    if (!tape.chance(pressure.pause)) return;
    const ms = tape.between(1, 90) * 1_000;
    world.frozen.add(actor);
    ledger.interruptWorker(actor);
    world.log(`${actor} SIGSTOP inside flow control (after ${op}), for ${ms / 1_000} s`);
    const thaw = world.now + ms;
    world.timer("scheduler", thaw, `${actor} SIGCONT`, () => {
      if (world.frozen.delete(actor)) world.log(`${actor} SIGCONT (after ${ms / 1_000} s inside flow control)`);
    });
    const runId = args[0];
    if (op === "releaseLease" && typeof runId === "string" && tape.next(2) === 1) world.timer("client", thaw, `cancel ${runId} as ${actor} thaws`, () => cancel(runId));
  };
}

/**
 * Two to `maxRuns` runs of `sim-limited` (limit 1), most of one key; half of them cancelled,
 * often while they wait in the queue.
 */
export function planFlowRuns(tape: Tape, pressure: FlowPressure): PlannedRun[] {
  const count = tape.between(2, pressure.maxRuns);
  const plans: PlannedRun[] = [];
  for (let i = 0; i < count; i++) {
    const plan: PlannedRun = { runId: `r${i}`, workflow: "sim-limited", input: { key: tape.next(4) === 3 ? "k1" : "k0" }, signalsAt: [] };
    if (tape.next(2) === 1) plan.cancelAt = tape.next(2) === 0 ? tape.between(0, 30) * 1_000 : tape.between(0, 180) * 1_000;
    plans.push(plan);
  }
  return plans;
}
