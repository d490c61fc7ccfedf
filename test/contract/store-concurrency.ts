/** Contract: racing callers on one store object; conditional writes pick exactly one winner. */
import { expect, it } from "vitest";
import type { JournalStore } from "../../lib/ports.ts";
import { T, leasedRun, newRun } from "./helpers.ts";

const RACERS = 20;

export function concurrencyTests(store: () => JournalStore): void {
  it(`${RACERS} concurrent acquireLease on one run grant exactly one lease`, async () => {
    const runId = await newRun(store(), "race-lease");
    const results = await Promise.all(
      Array.from({ length: RACERS }, (_, i) => store().acquireLease(runId, { owner: `owner-${i}`, now: T + 1, ttlMs: 30_000 })),
    );
    const winners = results.flatMap((r) => (r.acquired ? [r] : []));
    expect(winners).toHaveLength(1);
    const winner = winners[0];
    expect(winner?.lease.token).toBe(1);
    for (const r of results) {
      if (r.acquired) continue;
      expect(r.reason).toBe("held");
      expect(r.run?.lease).toEqual(winner?.lease);
    }
    expect(await store().getRun(runId)).toMatchObject({ status: "running", leaseToken: 1, invocations: 1, lease: winner?.lease });
  });

  it(`${RACERS} concurrent appendRecord of one key write exactly one body; the others get it back`, async () => {
    const runId = await newRun(store(), "race-append");
    const results = await Promise.all(
      Array.from({ length: RACERS }, (_, i) => store().appendRecord(runId, { key: "step#charge", body: { writer: i, charge: `ch_${i}` } })),
    );
    const won = results.flatMap((r, i) => (r.written ? [i] : []));
    expect(won).toHaveLength(1);
    const body = { writer: won[0], charge: `ch_${won[0]}` };
    for (const r of results) if (!r.written) expect(r.existing).toEqual({ key: "step#charge", body });
    expect((await store().loadJournal(runId))?.records).toEqual([{ key: "step#charge", body }]);
  });

  it("finishRun with a stale token fails once another owner has taken the expired lease", async () => {
    const { runId, token: stale } = await leasedRun(store(), "race-finish", "owner-a", T);
    const taken = await store().acquireLease(runId, { owner: "owner-b", now: T + 30_001, ttlMs: 30_000 });
    expect(taken.acquired).toBe(true);
    // The slow first owner and the new one finish at the same time: only the current token counts.
    const [staleFinish, currentRelease] = await Promise.all([
      store().finishRun(runId, { now: T + 30_002, status: "completed", result: "from-a", expect: { token: stale } }),
      store().releaseLease(runId, stale + 1, { now: T + 30_002, wakeAt: T + 90_000, waitingFor: "sleep:nap" }),
    ]);
    expect(staleFinish).toBe(false);
    expect(currentRelease).toStrictEqual({ released: true, wakeAt: T + 90_000 });
    const run = await store().getRun(runId);
    expect(run).toMatchObject({ status: "suspended", leaseToken: stale + 1, wakeAt: T + 90_000, invocations: 2 });
    expect(run?.result).toBeUndefined();
  });
}
