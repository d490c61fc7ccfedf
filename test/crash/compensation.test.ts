/**
 * Saga compensations under SIGKILL. Three bookings register `undo-a`, `undo-b`, `undo-c`; then
 * the charge is declined (the run must end failed) or the run is cancelled while it sleeps (it
 * must end cancelled). Compensation runs newest first; the worker is killed right after the first
 * compensation is recorded, the next worker is killed inside the second compensation's body, and
 * a third finishes. Every compensation is recorded exactly once, in reverse order; each ran once,
 * except the one killed inside its body, which ran again with the same idempotency key.
 */
import { describe, it, expect } from "vitest";
import type { JournalRecord } from "waymark";
import { type CrashLab, withLab } from "./harness.ts";
import { until } from "../support/until.ts";
import { sagaFlow } from "./workflows.ts";

/** Worker 1 dies right after `undo-c` is recorded, worker 2 inside `undo-b`'s body, worker 3 finishes. */
async function compensateThroughKills(lab: CrashLab, runId: string, trigger: () => Promise<void>): Promise<void> {
  const first = lab.spawn({ label: "1", runs: [runId], crashAt: "completed:undo-c" });
  await trigger();
  await first.exit;
  expect(first.exited?.signal, first.describe()).toBe("SIGKILL");

  const second = lab.spawn({ label: "2", runs: [runId], crashAt: "inside:undo-b" });
  await second.exit;
  expect(second.exited?.signal, second.describe()).toBe("SIGKILL");

  const third = lab.spawn({ label: "3", runs: [runId] });
  await third.exit;
  expect(third.exited?.code, third.describe()).toBe(0);
}

function stepRecords(records: JournalRecord[], stepId: string): JournalRecord[] {
  return records.filter((r) => r.type === "step" && r.stepId === stepId);
}

async function assertCompensatedOnce(lab: CrashLab, runId: string): Promise<void> {
  // The work before the failure ran once, in the first worker.
  for (const leg of ["a", "b", "c"]) expect(lab.log.of(runId, `book-${leg}`).map((e) => e.worker), `book-${leg}`).toEqual(["1"]);

  // Compensation bodies: undo-c once (recorded before the first kill), undo-b killed inside in
  // worker 2 and run again in worker 3 with the same key, undo-a once in worker 3.
  expect(lab.log.of(runId, "undo-c").map((e) => e.worker)).toEqual(["1"]);
  expect(lab.log.of(runId, "undo-b").map((e) => e.worker)).toEqual(["2", "3"]);
  expect(lab.log.of(runId, "undo-a").map((e) => e.worker)).toEqual(["3"]);
  for (const leg of ["a", "b", "c"]) {
    expect(new Set(lab.log.of(runId, `undo-${leg}`).map((e) => e.key)), `undo-${leg}'s keys`).toEqual(new Set([`${runId}/undo-${leg}`]));
  }

  // The journal: each compensation recorded once, ok, newest first.
  const records = await lab.records(runId);
  for (const leg of ["a", "b", "c"]) {
    const r = stepRecords(records, `undo-${leg}`);
    expect(r, `undo-${leg} records`).toHaveLength(1);
    expect(r[0]).toMatchObject({ kind: "run", status: "ok", result: `released-${leg}` });
  }
  const order = records.filter((r) => r.type === "step" && r.stepId.startsWith("undo-")).map((r) => (r as { stepId: string }).stepId);
  expect(order).toEqual(["undo-c", "undo-b", "undo-a"]);
  // And in the order the bodies first started.
  const firstStarts = ["undo-c", "undo-b", "undo-a"].map((s) => lab.log.of(runId, s)[0]?.at ?? Infinity);
  expect([...firstStarts].sort((a, b) => a - b)).toEqual(firstStarts);
}

describe.concurrent("saga compensation under SIGKILL", () => {
  it("after a declined charge: compensations recorded once each, newest first, and the run ends failed", async () => {
    await withLab(async (lab) => {
      const runId = "saga-fail";
      await compensateThroughKills(lab, runId, async () => {
        await lab.client.start(sagaFlow, { runId, input: { mode: "fail", undoMs: 30 } });
      });
      const run = await lab.client.get(runId);
      expect(run.status).toBe("failed");
      expect(JSON.stringify(run.error)).toContain("card declined");
      expect(lab.log.of(runId, "charge").map((e) => e.worker)).toEqual(["1"]);
      expect(stepRecords(await lab.records(runId), "charge")).toMatchObject([{ status: "failed" }]);
      await assertCompensatedOnce(lab, runId);
    });
  });

  it("after client.cancel during a sleep: compensations recorded once each, newest first, and the run ends cancelled with the reason", async () => {
    await withLab(async (lab) => {
      const runId = "saga-cancel";
      await compensateThroughKills(lab, runId, async () => {
        await lab.client.start(sagaFlow, { runId, input: { mode: "cancel", undoMs: 30 } });
        await until("the run to sleep in `hold`", async () => stepRecords(await lab.records(runId), "hold").length > 0);
        expect((await lab.client.cancel(runId, { reason: "customer withdrew" })).outcome).toBe("requested");
      });
      const run = await lab.client.get(runId);
      expect(run).toMatchObject({ status: "cancelled", error: { name: "CancelledError", fields: { reason: "customer withdrew" } } });
      expect(lab.log.of(runId, "charge")).toEqual([]);
      await assertCompensatedOnce(lab, runId);
    });
  });
});
