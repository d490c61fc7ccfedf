/**
 * One crash scenario of the real order flow: start the run, let worker 1 execute it with one
 * crash point, approve it when it waits for approval, and once worker 1 is dead start worker 2
 * (no crash point) on the same journal to finish the run.
 */
import { type RunMeta, TERMINAL_STATUSES } from "waymark";
import type { Order } from "../../functions/order-flow.ts";
import { type CrashLab, type WorkerProcess } from "./harness.ts";
import { until } from "../support/until.ts";
import { orderFlow } from "./workflows.ts";

export const order: Order = {
  orderId: "8472",
  sku: "LAMP-01",
  quantity: 1,
  amount: 129.5,
  email: "kim@example.com",
  address: "1 Harbour St, Leith",
};

/** The order flow's `step.run` steps, in order (the approval wait sits between fraud_check and charge). */
export const orderBodies = ["reserve", "fraud_check", "charge", "create_label", "notify_customer"] as const;

export interface OrderCrash {
  runId: string;
  first: WorkerProcess;
  second: WorkerProcess | undefined;
  run: RunMeta;
}

/** How long one scenario may take, from the run's start to its end. */
export const SCENARIO_MS = 90_000;

export async function crashOrder(lab: CrashLab, crashAt: string, runId = "order-8472"): Promise<OrderCrash> {
  await lab.client.start(orderFlow, { runId, input: order });
  const first = lab.spawn({ label: "1", runs: [runId], crashAt });
  let second: WorkerProcess | undefined;
  let approved = false;
  const run = await until(`run ${runId} to finish (crash at ${crashAt})`, async () => {
    const run = await lab.client.get(runId);
    if (TERMINAL_STATUSES.has(run.status)) return run;
    if (!approved && run.status === "suspended" && run.waitingFor === "signal:approval") {
      await lab.client.signal(runId, "approval", { approved: true, approver: "ana@shop" }, { signalId: "approval-ana-1" });
      approved = true;
    }
    // `exited` is set once the dead worker is reaped, so its pid no longer answers kill(pid, 0).
    if (first.exited && !second) second = lab.spawn({ label: "2", runs: [runId] });
    return undefined;
    // Generous: the order-flow file runs its fourteen scenarios at once, each starting two workers.
  }, SCENARIO_MS);
  await first.exit;
  await second?.exit;
  return { runId, first, second, run };
}
