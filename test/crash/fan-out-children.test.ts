/**
 * Issue 21: twenty children fanned out by `step.map` at concurrency 5, through a SIGKILL storm.
 * Each item is a durable sub-context that `step.invoke`s a child (`c-reserve`, then `c-charge`
 * through the fake payment provider). Worker processes in a row are killed as soon as any child's
 * charge body starts, each after making what progress it could; then a clean worker finishes.
 *
 * What must hold: the parent completes with twenty receipts; there are exactly twenty child
 * runs, each completed, each card charged once under its child step's key (a body killed inside
 * ran again with the same key); each child's end reached the parent as one signal; no item
 * invoked its child twice; and never more than five children were between their first step and
 * their end at once (the bound holds across suspensions and kills, read from the bodies' log).
 */
import { describe, expect, it } from "vitest";
import type { JournalRecord } from "waymark";
import { withLab } from "./harness.ts";
import { fanChildrenFlow } from "./workflows.ts";

const KIDS = 20;
const CONCURRENCY = 5;
const KILLS = 6;

describe("step.map of children under a SIGKILL storm", () => {
  it(`${KIDS} children at concurrency ${CONCURRENCY}, ${KILLS} workers killed inside a charge, then a clean one: each child once, each card charged once`, async () => {
    await withLab(async (lab) => {
      const runId = "fan-kids";
      await lab.client.start(fanChildrenFlow, { runId, input: { kids: KIDS, concurrency: CONCURRENCY, chargeMs: 30 } });
      for (let k = 1; k <= KILLS; k++) {
        const worker = lab.spawn({ label: String(k), runs: [runId], crashAt: "started:c-charge" });
        await worker.exit;
        expect(worker.exited?.signal, `worker ${k} was killed inside a charge\n${worker.describe()}`).toBe("SIGKILL");
      }
      const last = lab.spawn({ label: "last", runs: [runId] });
      const run = await lab.finished(runId);
      await last.exit;
      expect(last.exited?.code, last.describe()).toBe(0);
      expect(run.status, JSON.stringify(run)).toBe("completed");

      const childIds = Array.from({ length: KIDS }, (_, i) => `${runId}:kids:${i}:pay`);
      const { runs } = await lab.client.list({ limit: 100 });
      expect(runs.filter((r) => r.workflow === "crash-child").map((r) => r.runId).sort()).toEqual([...childIds].sort());
      const charges = lab.charges();
      for (const childId of childIds) {
        expect((await lab.client.get(childId)).status, childId).toBe("completed");
        expect(charges.filter((c) => c.idempotencyKey === `${childId}/c-charge`), `${childId} charged once`).toHaveLength(1);
        expect(new Set(lab.log.of(childId, "c-charge").map((e) => e.key))).toEqual(new Set([`${childId}/c-charge`]));
      }
      const result = run.result as { children: number; charges: string[] };
      expect(result.children).toBe(KIDS);
      expect(new Set(result.charges).size).toBe(KIDS);

      // Each item invoked its child once, and got its end as one signal.
      const records = await lab.records(runId);
      for (let i = 0; i < KIDS; i++) {
        expect(records.filter((r) => r.type === "step" && r.stepId === `kids[${i}]/pay`), `item ${i}'s invoke`).toHaveLength(1);
      }
      const childSignals = records.filter((r): r is Extract<JournalRecord, { type: "signal" }> => r.type === "signal" && r.name === "__child");
      expect(childSignals.map((s) => s.signalId).sort()).toEqual(childIds.map((c) => `child:${c}`).sort());

      // The bound: a child is open from its first body start to its charge's last start.
      const spans = childIds.map((c) => {
        const starts = [...lab.log.of(c, "c-reserve"), ...lab.log.of(c, "c-charge")].map((e) => e.at);
        return { from: Math.min(...starts), to: Math.max(...starts) };
      });
      const peak = Math.max(...spans.map((s) => spans.filter((o) => o.from <= s.from && s.from <= o.to).length));
      expect(peak, "children open at once").toBeLessThanOrEqual(CONCURRENCY);
    });
  });
});
