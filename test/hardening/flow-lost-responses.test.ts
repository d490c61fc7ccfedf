/**
 * Issue 11, item 5 under issue 8's fault: flow control's store operations applied with their
 * responses lost. Four runs of one key (limit 1) are driven through the wake table of a real
 * SQLite journal, four invocations at a time, while the first three calls of one operation lose
 * their answers: "retry" re-sends the request (as the AWS SDK does), "throw" hands the caller a
 * transient error (the invocation fails and its wake comes again). Every run must complete, never
 * two bodies at once, nothing left in the slots or the queue; and with "retry", the runs that
 * queued start first in, first out.
 */
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { durable } from "waymark";
import type { JournalStore } from "../../lib/ports.ts";
import { LostResponseStore, type LostResponseMode } from "../support/lost-response-store.ts";
import { type SqliteLab, sqliteLab } from "../support/sqlite-lab.ts";

const ids = ["r1", "r2", "r3", "r4"];
let lab: SqliteLab;
afterEach(() => lab?.close());

async function drain(lab: SqliteLab, store: JournalStore): Promise<void> {
  const engine = lab.engine("w", store);
  for (let round = 0; round < 400; round++) {
    const done = await Promise.all(ids.map(async (id) => (await lab.store.getRun(id))?.status === "completed"));
    if (done.every(Boolean)) return;
    const due = await lab.wakes.claimDue(lab.clock.now(), 4, 60_000);
    if (due.length === 0) {
      const next = await lab.wakes.nextDueAt();
      // Nothing queued to wake: what the local runtime's watchdog would find overdue.
      const overdue = next === undefined ? await lab.store.listDueRuns(lab.clock.now(), 10) : [];
      for (const run of overdue) await lab.wakes.schedule({ runId: run.runId, at: lab.clock.now(), reason: "watchdog", key: "watchdog" });
      if (overdue.length === 0) lab.clock.setTo(Math.max(lab.clock.now() + 1_000, next ?? 0));
      continue;
    }
    await Promise.all(
      due.map(async (wake) => {
        try {
          await engine.invoke(wake.runId);
          await lab.wakes.ack(wake);
        } catch {
          // A lost answer thrown at the invocation: its wake comes again after its visibility.
        }
      }),
    );
  }
  throw new Error("the runs did not all complete");
}

describe("flow control, a store answer lost", () => {
  const ops = ["takeSlot", "peek", "dequeue", "enqueue", "freeSlot", "releaseLease", "markDue", "getRun"] as const;
  for (const mode of ["retry", "throw"] as LostResponseMode[]) {
    for (const op of ops) {
      it(`${op}, ${mode}: every run completes, one at a time${mode === "retry" ? ", in order" : ""}, nothing left queued`, async () => {
        const began: string[] = [];
        let running = 0;
        let peak = 0;
        const wf = durable({ name: "lossy-lane", input: z.object({}), concurrency: { key: () => "k", limit: 1 } }, async (_in, step) =>
          step.run("work", async () => {
            began.push(step.runId);
            peak = Math.max(peak, ++running);
            await new Promise((r) => setTimeout(r, 5));
            running--;
            return step.runId;
          }),
        );
        lab = sqliteLab([wf]);
        for (const id of ids) {
          await lab.client().start(wf, { runId: id, input: {} });
          lab.clock.advance(1);
        }
        const t0 = lab.clock.now();
        const lossy = new LostResponseStore(lab.store);
        for (let i = 0; i < 3; i++) lossy.lose(op, () => true, mode);
        await drain(lab, lossy.store);
        // Retried answers need no backstop; a thrown one costs a redelivery or a recheck, not more.
        expect(lab.clock.now() - t0).toBeLessThanOrEqual(mode === "retry" ? 0 : 180_000);
        expect(lossy.fired.length).toBeGreaterThan(0);
        expect(peak).toBe(1);
        expect([...new Set(began)].sort()).toEqual(ids);
        // The four first arrive together at a free slot (one wins, any one); the rest queue and start in order.
        if (mode === "retry") expect(began.slice(1)).toEqual(ids.filter((id) => id !== began[0]));
        expect(await lab.store.peek("lossy-lane:k")).toBeUndefined();
        expect(await lab.store.takeSlot("lossy-lane:k", 1, { runId: "probe", expiresAt: lab.clock.now() + 1 }, lab.clock.now())).toBe(true); // no slot left held
      });
    }
  }
});
