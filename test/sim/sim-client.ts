/**
 * The client of a story: it starts the planned runs, then signals and cancels them when their
 * plans say (and when an event of the faults does), retrying what fails transiently. What it was
 * told goes to the ledger (acknowledged signals, cancels and their answers).
 */
import type { Client } from "../../lib/client.ts";
import type { PlannedRun } from "./final-checks.ts";
import type { Ledger } from "./ledger.ts";
import { TransientStoreError } from "./sim-ports.ts";
import type { World } from "./world.ts";

export interface SimClient {
  /** Tasks begun and not yet done (retries waiting count). */
  readonly busy: () => number;
  /** Runs whose start the client saw succeed. */
  readonly started: ReadonlySet<string>;
  /** Sends the plan's `i`-th signal (past its planned ones: an extra). */
  signal(plan: PlannedRun, i: number): void;
  cancel(plan: PlannedRun): void;
}

/** Starts every plan's run and sets the timers of its planned signals and cancel. */
export function simClient(world: World, ledger: Ledger, client: Client, plans: readonly PlannedRun[], start: number): SimClient {
  let busy = 0;
  const task = (label: string, run: () => Promise<void>, attempt = 1) => {
    busy++;
    world.add("client", label, () => {
      run().then(
        () => busy--,
        (err: unknown) => {
          busy--;
          if (err instanceof TransientStoreError && attempt < 30) {
            busy++;
            world.timer("client", world.now + 1_000, `${label} (retry ${attempt + 1})`, () => {
              busy--;
              task(label, run, attempt + 1);
            });
          } else world.log(`client ${label}: ${(err as Error)?.name}: ${(err as Error)?.message}`);
        },
      );
    });
  };
  const started = new Set<string>();
  const signal = (plan: PlannedRun, i: number): void => {
    const signalId = `sig-${plan.runId}-${i}`;
    const [name, payload] = plan.workflow === "sim-inbox" ? ["msg", { n: i }] : ["approve", { ok: i % 3 !== 2 }];
    task(`signal ${plan.runId} ${signalId}`, async () => {
      try {
        const receipt = await client.signal(plan.runId, name, payload, { signalId });
        ledger.signals.push({ runId: plan.runId, signalId, status: receipt.status });
        world.log(`client signal ${signalId}: ${receipt.status}`);
      } catch (err) {
        if (err instanceof TransientStoreError) throw err;
        world.log(`client signal ${signalId} refused: ${(err as Error)?.name}`);
      }
    });
  };
  const cancel = (plan: PlannedRun): void => {
    task(`cancel ${plan.runId}`, async () => {
      const answer: unknown = await client.cancel(plan.runId, { reason: "simulated cancel" }).catch((err: unknown) => {
        if (err instanceof TransientStoreError) throw err;
        return `refused: ${(err as Error)?.name}`;
      });
      ledger.cancels.push({ runId: plan.runId, answer });
      if ((answer as { outcome?: unknown }).outcome === "cancelled") ledger.cancelAnswered(plan.runId);
      world.log(`client cancel ${plan.runId}: ${JSON.stringify(answer)}`);
    });
  };
  for (const plan of plans) {
    task(`start ${plan.runId}`, async () => {
      await client.start(plan.workflow, { runId: plan.runId, input: plan.input });
      started.add(plan.runId);
    });
    for (const [i, at] of plan.signalsAt.entries()) {
      world.timer("client", start + at, `signal ${plan.runId}#${i}`, () => signal(plan, i));
    }
    if (plan.cancelAt !== undefined) world.timer("client", start + plan.cancelAt, `cancel ${plan.runId}`, () => cancel(plan));
  }
  return { busy: () => busy, started, signal, cancel };
}
