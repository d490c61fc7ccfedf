/**
 * SIGKILL of a real worker process running the real order flow on a real SQLite journal, then a
 * restart on the same file (docs/architecture.md, "Testing"). Each scenario has its own
 * journal, so they run concurrently.
 */
import { describe, it } from "vitest";
import { withLab } from "./harness.ts";
import { crashOrder, order, orderBodies, SCENARIO_MS } from "./order-scenario.ts";

describe.concurrent("order flow: SIGKILL and restart", { timeout: SCENARIO_MS + 30_000 }, () => {
  it("(a) SIGKILL right after charge is recorded: the restart returns charge from the journal and does not execute it", async ({ expect }) => {
    await withLab(async (lab) => {
      const { runId, first, second, run } = await crashOrder(lab, "completed:charge");

      expect(first.exited?.signal, first.describe()).toBe("SIGKILL");
      expect(second?.exited?.code, second?.describe()).toBe(0);
      expect(run.status, JSON.stringify(run)).toBe("completed");

      const charges = lab.log.of(runId, "charge");
      expect(charges.map((e) => e.worker)).toEqual(["1"]);
      const restartCharge = lab.events().filter((e) => e.worker === "2" && e.step?.stepId === "charge");
      expect(restartCharge.map((e) => e.step?.outcome)).toEqual(["replayed"]);

      const ledger = lab.charges();
      expect(ledger).toHaveLength(1);
      expect(run.result).toMatchObject({ status: "shipped", chargeId: ledger[0]?.chargeId });
    });
  });

  it("(b) SIGKILL after the provider charged, before the record: the restart charges again with the same key, the provider charges once", async ({ expect }) => {
    await withLab(async (lab) => {
      const { runId, first, second, run } = await crashOrder(lab, "inside:charge");

      expect(first.exited?.signal, first.describe()).toBe("SIGKILL");
      expect(second?.exited?.code, second?.describe()).toBe(0);
      expect(run.status, JSON.stringify(run)).toBe("completed");

      const charges = lab.log.of(runId, "charge");
      expect(charges.map((e) => [e.worker, e.key])).toEqual([
        ["1", `${runId}/charge`],
        ["2", `${runId}/charge`],
      ]);

      const ledger = lab.charges();
      expect(ledger).toHaveLength(1);
      expect(ledger[0]).toMatchObject({ orderId: order.orderId, amount: order.amount, idempotencyKey: `${runId}/charge` });
      expect(run.result).toMatchObject({ status: "shipped", chargeId: ledger[0]?.chargeId });
    });
  });

  // Every step boundary (the record is written) and every step body (the side effect happened,
  // the record did not), plus the two edges of the approval wait.
  const crashPoints = [
    ...orderBodies.flatMap((step) => [`inside:${step}`, `completed:${step}`]),
    "blocked:approval", // the run suspends for approval: before the wait is recorded and the lease released
    "replayed:approval", // the first invocation after the approval was delivered
  ];

  it.for(crashPoints)("(e) SIGKILL at %s: the restart finishes the run, no double charge, only the killed body runs twice", async (point, { expect }) => {
    await withLab(async (lab) => {
      const { runId, first, second, run } = await crashOrder(lab, point);

      expect(first.exited?.signal, `the crash point was reached\n${first.describe()}`).toBe("SIGKILL");
      expect(second?.exited?.code, second?.describe()).toBe(0);
      expect(run.status, JSON.stringify(run)).toBe("completed");
      expect(run.result).toMatchObject({ status: "shipped", orderId: order.orderId, approvedBy: "ana@shop" });

      const ledger = lab.charges();
      expect(ledger, "charges in the provider's ledger").toHaveLength(1);
      expect(ledger[0]?.idempotencyKey).toBe(`${runId}/charge`);

      const executions = Object.fromEntries(orderBodies.map((step) => [step, lab.log.of(runId, step)]));
      const counts = Object.fromEntries(orderBodies.map((step) => [step, executions[step]?.length]));
      const expected = Object.fromEntries(orderBodies.map((step) => [step, point === `inside:${step}` ? 2 : 1]));
      expect(counts, "executions of each step body").toEqual(expected);
      for (const step of orderBodies) {
        expect(new Set(executions[step]?.map((e) => e.key)), `idempotency keys of ${step}`).toEqual(new Set([`${runId}/${step}`]));
      }
    });
  });
});
