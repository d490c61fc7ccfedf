/** Contract: incarnations (`step.continueAsNew`): a conditional switch, a journal per incarnation. */
import { expect, it } from "vitest";
import { journalIdOf } from "../../lib/core/run/journal-ids.ts";
import type { JournalStore } from "../../lib/ports.ts";
import { LostResponseStore } from "../support/lost-response-store.ts";
import { T, leasedRun } from "./helpers.ts";

export function incarnationTests(store: () => JournalStore): void {
  it("continueRun switches the lease holder's run to its next incarnation, pending and due now", async () => {
    const { runId, token } = await leasedRun(store(), "cont");
    await store().appendRecord(runId, { key: "step#a", body: { first: true } });
    expect(await store().continueRun(runId, token, { now: T + 5, input: { page: 2 }, incarnation: 2 })).toBe(true);
    const run = await store().getRun(runId);
    expect(run).toMatchObject({ status: "pending", incarnation: 2, input: { page: 2 }, wakeAt: T + 5, leaseToken: token });
    expect(run?.lease).toBeUndefined();
    expect((await store().listDueRuns(T + 5, 10_000)).some((r) => r.runId === runId)).toBe(true);
    // The new incarnation's journal starts empty; the first is kept and can be read.
    expect((await store().loadJournal(runId))?.records).toEqual([]);
    await store().appendRecord(journalIdOf(runId, 2), { key: "step#a", body: { second: true } });
    expect((await store().loadJournal(runId))?.records.map((r) => r.body)).toEqual([{ second: true }]);
    expect((await store().loadJournal(runId, { incarnation: 1 }))?.records.map((r) => r.body)).toEqual([{ first: true }]);
    // The next grant runs the new incarnation.
    const again = await store().acquireLease(runId, { owner: "o2", now: T + 6, ttlMs: 30_000 });
    expect(again.acquired && again.run.incarnation).toBe(2);
  });

  it("continueRun is refused to a stale token, and a retry after a lost answer says true", async () => {
    const { runId, token } = await leasedRun(store(), "cont-stale");
    expect(await store().releaseLease(runId, token, { now: T + 1 })).toStrictEqual({ released: true });
    await store().acquireLease(runId, { owner: "o2", now: T + 2, ttlMs: 30_000 });
    expect(await store().continueRun(runId, token, { now: T + 3, input: {}, incarnation: 2 })).toBe(false);
    const { runId: r2, token: t2 } = await leasedRun(store(), "cont-retry");
    expect(await new LostResponseStore(store()).lose("continueRun").store.continueRun(r2, t2, { now: T + 3, input: { n: 1 }, incarnation: 2 })).toBe(true);
    expect(await store().getRun(r2)).toMatchObject({ incarnation: 2, status: "pending" });
  });
}
