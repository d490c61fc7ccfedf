/**
 * At-most-once steps across a real SIGKILL (`crash-charge`: prepare → charge → reconcile on
 * interruption). Worker 1 is killed inside the charge body; worker 2, on the same journal file,
 * must not run an at-most-once body again: the workflow gets `StepInterruptedError`, reconciles
 * with the provider and completes, and the journal shows why (the `start` record of the attempt,
 * the step failed with StepInterruptedError). The same kill of an at-least-once charge runs the
 * body again with the same idempotency key, and its record says the body may have run more than
 * once (`possibleReruns`).
 */
import { describe, it } from "vitest";
import type { JournalRecord } from "waymark";
import { type CrashLab, withLab } from "./harness.ts";
import { chargeFlow } from "./workflows.ts";

const input = { orderId: "8472", amount: 129.5 } as const;


/** Kills worker 1 at `crashAt`, then lets worker 2 finish the run on the same journal file. */
async function killAndRestart(lab: CrashLab, runId: string, semantics: "at-least-once" | "at-most-once", crashAt: string) {
  await lab.client.start(chargeFlow, { runId, input: { ...input, semantics } });
  const first = lab.spawn({ label: "1", runs: [runId], crashAt });
  await first.exit;
  const second = lab.spawn({ label: "2", runs: [runId] });
  const run = await lab.finished(runId);
  await second.exit;
  return { first, second, run, records: await lab.records(runId) };
}

function stepRecord(records: JournalRecord[], stepId: string) {
  return records.find((r) => r.type === "step" && r.stepId === stepId);
}

describe.concurrent("at-most-once steps: SIGKILL inside the body, restart", () => {
  it.for([
    { point: "inside:charge", charged: true, why: "after the provider charged, before the record" },
    { point: "started:charge", charged: false, why: "as the body starts, before the provider call" },
  ])(
    "SIGKILL at $point ($why): the restart does not run the body again, the workflow catches StepInterruptedError and reconciles",
    async ({ point, charged }, { expect }) => {
      await withLab(async (lab) => {
        const runId = `amo-${point.split(":")[0]}`;
        const { first, second, run, records } = await killAndRestart(lab, runId, "at-most-once", point);

        expect(first.exited?.signal, `the crash point was reached\n${first.describe()}`).toBe("SIGKILL");
        expect(second.exited?.code, second.describe()).toBe(0);
        expect(run.status, JSON.stringify(run)).toBe("completed");

        // The body ran once, in the killed worker; the restart ran the reconciliation instead.
        expect(lab.log.of(runId, "charge").map((e) => [e.worker, e.key])).toEqual([["1", `${runId}/charge`]]);
        expect(lab.log.of(runId, "reconcile").map((e) => e.worker)).toEqual(["2"]);
        const ledger = lab.charges();
        expect(ledger, "charges in the provider's ledger").toHaveLength(charged ? 1 : 0);
        expect(run.result).toEqual(charged ? { status: "reconciled", chargeId: ledger[0]?.chargeId } : { status: "not-charged" });

        // The journal says why: attempt 1 was started (by the killed invocation) and never finished.
        const prepare = stepRecord(records, "prepare");
        const start = records.find((r) => r.type === "start");
        expect(start).toMatchObject({ type: "start", stepId: "charge", attempt: 1, inv: prepare?.inv });
        const charge = stepRecord(records, "charge");
        expect(charge).toMatchObject({ kind: "run", status: "failed", attempts: 1, semantics: "at-most-once", error: { name: "StepInterruptedError" } });
        expect(charge?.inv, "the failure is recorded by the restart's invocation").toBeGreaterThan(prepare?.inv ?? Infinity);
        expect(charge).not.toHaveProperty("possibleReruns");
        expect(stepRecord(records, "reconcile")).toMatchObject({ kind: "run", status: "ok", result: charged ? ledger[0]?.chargeId : null });
        expect(records.indexOf(start as JournalRecord)).toBeLessThan(records.indexOf(charge as JournalRecord));

        const restartCharge = lab.events().filter((e) => e.worker === "2" && e.step?.stepId === "charge");
        expect(restartCharge.map((e) => e.step?.outcome)).toEqual(["failed"]);
      });
    },
  );

  it("contrast, at-least-once: SIGKILL inside:charge: the restart runs the body again with the same key, the provider charges once, and the record says the body may have run more than once", async ({ expect }) => {
    await withLab(async (lab) => {
      const runId = "alo-inside";
      const { first, second, run, records } = await killAndRestart(lab, runId, "at-least-once", "inside:charge");

      expect(first.exited?.signal, `the crash point was reached\n${first.describe()}`).toBe("SIGKILL");
      expect(second.exited?.code, second.describe()).toBe(0);
      expect(run.status, JSON.stringify(run)).toBe("completed");

      const executions = lab.log.of(runId, "charge");
      expect(executions.map((e) => [e.worker, e.key])).toEqual([
        ["1", `${runId}/charge`],
        ["2", `${runId}/charge`],
      ]);
      expect(lab.log.of(runId, "reconcile")).toEqual([]);
      const ledger = lab.charges();
      expect(ledger).toHaveLength(1);
      expect(run.result).toEqual({ status: "charged", chargeId: ledger[0]?.chargeId });

      expect(records.filter((r) => r.type === "start"), "no start records for an at-least-once step").toEqual([]);
      const charge = stepRecord(records, "charge");
      expect(charge).toMatchObject({ kind: "run", status: "ok", attempts: 1 });
      expect(charge).not.toHaveProperty("semantics");
      // The killed invocation (which recorded `prepare`, then ran the body and died) may have run it.
      expect(charge, JSON.stringify(charge)).toHaveProperty("possibleReruns");
      const possibleReruns = charge?.type === "step" && charge.kind === "run" ? (charge.possibleReruns ?? 0) : 0;
      expect(possibleReruns).toBeGreaterThanOrEqual(1);
      // records.ts: "the body ran between `attempts` and `attempts + possibleReruns` times".
      expect(charge?.type === "step" && charge.kind === "run" ? charge.attempts + possibleReruns : 0).toBeGreaterThanOrEqual(executions.length);
    });
  });
});
