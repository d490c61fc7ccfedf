/**
 * Which runs a story starts, drawn from its tape: one to four runs of the workloads, each with
 * when the client signals it and whether (and when) it cancels it.
 */
import type { PlannedRun } from "./final-checks.ts";
import type { Tape } from "./tape.ts";

/** One to four runs of the workloads, each with when the client signals it. */
export function planRuns(tape: Tape): PlannedRun[] {
  const count = tape.between(1, 4);
  const plans: PlannedRun[] = [];
  for (let i = 0; i < count; i++) {
    const runId = `r${i}`;
    const kind = tape.next(7);
    const signalsAt: number[] = [];
    const at = () => tape.between(0, 600) * 1_000;
    switch (kind) {
      case 0: {
        const wait = tape.next(2) === 1;
        if (wait) signalsAt.push(at());
        plans.push({ runId, workflow: "sim-saga", input: { legs: tape.between(1, 3), parallel: tape.next(2) === 1, sleepMs: tape.next(3) * 5_000, wait }, signalsAt });
        break;
      }
      case 1: {
        const total = tape.between(1, 5);
        for (let s = 0; s < total; s++) signalsAt.push(at());
        plans.push({ runId, workflow: "sim-inbox", input: { seen: 0, total }, signalsAt });
        break;
      }
      case 2:
        plans.push({ runId, workflow: "sim-fanout", input: { items: tape.between(1, 6), concurrency: tape.between(1, 3) }, signalsAt });
        break;
      case 3:
        plans.push({ runId, workflow: "sim-parent", input: { childSteps: tape.between(1, 3) }, signalsAt });
        break;
      case 4:
      case 5:
        plans.push({ runId, workflow: "sim-limited", input: { key: `k${tape.next(2)}` }, signalsAt });
        break;
      default:
        plans.push({ runId, workflow: "sim-once", input: {}, signalsAt });
    }
    // A third of the runs are cancelled: often at once, as they start, sometimes later.
    const plan = plans.at(-1);
    if (plan && tape.next(3) === 2) plan.cancelAt = tape.next(2) === 0 ? 0 : tape.between(0, 300) * 1_000;
  }
  return plans;
}
