/**
 * Child workflows under SIGKILL. A parent runs `p-prepare`, `step.invoke`s a child (run
 * `<parent>:pay`: `c-reserve`, then `c-charge` through the fake payment provider) and ends with
 * `p-finish`. Workers run one run at a time (concurrency 1), so "the child has ended and the
 * parent has not resumed" is a real state a kill can land in. Killed while the child runs
 * (inside `c-charge`), between the child's end being delivered to the parent and the child being
 * marked finished, and right after the child's invocation ended: there is one child run, each
 * child step was recorded once (a body killed inside ran again with the same key, and the card
 * was charged once), the parent got the child's outcome as one signal, and it completes with it.
 */
import { describe, it, expect } from "vitest";
import type { JournalRecord } from "waymark";
import { type CrashLab, withLab } from "./harness.ts";
import { parentFlow } from "./workflows.ts";

const input = (orderId: string) => ({ orderId, amount: 42, chargeMs: 20 });

async function killed(lab: CrashLab, label: string, runs: string[], crashAt: string): Promise<void> {
  const worker = lab.spawn({ label, runs, crashAt, concurrency: 1 });
  await worker.exit;
  expect(worker.exited?.signal, worker.describe()).toBe("SIGKILL");
}

async function finishes(lab: CrashLab, label: string, runs: string[]): Promise<void> {
  const worker = lab.spawn({ label, runs, concurrency: 1 });
  await worker.exit;
  expect(worker.exited?.code, worker.describe()).toBe(0);
}

const steps = (records: JournalRecord[], stepId: string) => records.filter((r) => r.type === "step" && r.stepId === stepId);

/** What every run of this scenario must show once the parent has completed. */
async function assertOneChildOnce(lab: CrashLab, parentId: string): Promise<void> {
  const childId = `${parentId}:pay`;
  const parent = await lab.client.get(parentId);
  const child = await lab.client.get(childId);
  expect(parent.status, "the parent completed").toBe("completed");
  expect(child.status, "the child completed").toBe("completed");

  // Exactly one child run, with the derived id.
  const { runs } = await lab.client.list();
  expect(runs.filter((r) => r.workflow === "crash-child").map((r) => r.runId)).toEqual([childId]);

  // The card was charged once, under the child step's key; the parent's result carries that charge.
  const charges = lab.charges().filter((c) => c.idempotencyKey === `${childId}/c-charge`);
  expect(charges).toHaveLength(1);
  expect(parent.result).toEqual({ orderId: parentId, receipt: { hold: `hold-${parentId}`, chargeId: charges[0]?.chargeId } });
  expect(child.result).toEqual({ hold: `hold-${parentId}`, chargeId: charges[0]?.chargeId });

  // Child: each step recorded once; every execution of a step with the same key.
  const childRecords = await lab.records(childId);
  for (const stepId of ["c-reserve", "c-charge"]) {
    expect(steps(childRecords, stepId), `child ${stepId} records`).toHaveLength(1);
    expect(new Set(lab.log.of(childId, stepId).map((e) => e.key)), `child ${stepId} keys`).toEqual(new Set([`${childId}/${stepId}`]));
  }
  expect(childRecords.filter((r) => r.type === "parent")).toHaveLength(1);

  // Parent: its own steps once each; the child started by one recorded step; its end delivered
  // as exactly one signal, and consumed once.
  const parentRecords = await lab.records(parentId);
  for (const stepId of ["p-prepare", "p-finish"]) {
    expect(steps(parentRecords, stepId), `parent ${stepId} records`).toHaveLength(1);
    expect(lab.log.of(parentId, stepId), `parent ${stepId} executions`).toHaveLength(1);
  }
  expect(steps(parentRecords, "pay:start")).toHaveLength(1);
  expect(parentRecords.filter((r) => r.type === "signal")).toMatchObject([{ signalId: `child:${childId}`, payload: { status: "completed" } }]);
}

describe.concurrent("step.invoke under SIGKILL", () => {
  it("killed inside a child step, then after the child's end reached the parent but before the child was marked finished", async () => {
    await withLab(async (lab) => {
      const parentId = "order-c1";
      const childId = `${parentId}:pay`;
      const runs = [parentId, childId];
      await lab.client.start(parentFlow, { runId: parentId, input: input(parentId) });

      await killed(lab, "1", runs, "inside:c-charge");
      // The charge happened, its record did not.
      expect(lab.charges().filter((c) => c.idempotencyKey === `${childId}/c-charge`)).toHaveLength(1);
      expect(steps(await lab.records(childId), "c-charge")).toHaveLength(0);

      await killed(lab, "2", runs, `finish:${childId}`);
      // The parent has the child's end; the child is not marked finished yet.
      expect((await lab.records(parentId)).filter((r) => r.type === "signal")).toHaveLength(1);
      expect((await lab.client.get(childId)).status).not.toBe("completed");

      await finishes(lab, "3", runs);
      await assertOneChildOnce(lab, parentId);
      // c-charge ran in worker 1 (killed inside) and again in worker 2, same key; c-reserve once.
      expect(lab.log.of(childId, "c-charge").map((e) => e.worker)).toEqual(["1", "2"]);
      expect(lab.log.of(childId, "c-reserve").map((e) => e.worker)).toEqual(["1"]);
    });
  });

  it("killed right after the child's invocation ended, before the parent resumed", async () => {
    await withLab(async (lab) => {
      const parentId = "order-c2";
      const childId = `${parentId}:pay`;
      const runs = [parentId, childId];
      await lab.client.start(parentFlow, { runId: parentId, input: input(parentId) });

      await killed(lab, "1", runs, `ended:${childId}`);
      expect((await lab.client.get(childId)).status).toBe("completed");
      const parentNow = await lab.client.get(parentId);
      expect(parentNow.status, "the parent has not resumed").not.toBe("completed");
      expect(steps(await lab.records(parentId), "p-finish")).toHaveLength(0);

      await finishes(lab, "2", runs);
      await assertOneChildOnce(lab, parentId);
      for (const stepId of ["c-reserve", "c-charge"]) expect(lab.log.of(childId, stepId).map((e) => e.worker), stepId).toEqual(["1"]);
      expect(lab.log.of(parentId, "p-finish").map((e) => e.worker)).toEqual(["2"]);
    });
  });
});
