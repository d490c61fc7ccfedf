/**
 * Contract: retention. A finished run is kept for the store's retention period (30 days by
 * default, counted from its finish) and then `purgeExpired` deletes it with every record; its
 * id may then be started again and the new run sees nothing of the old one. The store is shared
 * with the other contract tests, so each test works in a time window far beyond theirs and
 * purges everything that expired there (other tests' finished runs included, harmlessly).
 */
import { expect, it } from "vitest";
import type { JournalStore, PurgedRun } from "../../lib/ports.ts";
import { journalIdOf } from "../../lib/core/run/journal-ids.ts";
import { freshId, randomBase } from "./helpers.ts";

/** Every store's default retention. */
const RETENTION_MS = 30 * 86_400_000;
/** Ten years after the other tests' `T`, on a whole second (DynamoDB's TTL counts seconds). */
const window = (): number => Math.floor(randomBase(2_020_000_000_000, 1_000_000_000) / 1000) * 1000;

/** Purges until nothing more has expired by `now`; every run reported. */
async function purgeAll(store: JournalStore, now: number): Promise<PurgedRun[]> {
  const all: PurgedRun[] = [];
  for (let rounds = 0; rounds < 1_000; rounds++) {
    const page = await store.purgeExpired(now, 25);
    expect(page.length).toBeLessThanOrEqual(25);
    if (page.length === 0) return all;
    all.push(...page);
  }
  throw new Error("purgeExpired never ran dry");
}

/** A run created at `base`, with a step, a signal marked late, and finished at `base + 1 s`. */
async function finishedRun(store: JournalStore, base: number, label: string): Promise<string> {
  const runId = freshId(label);
  await store.createRun({ runId, workflow: "contract-flow", input: { life: 1 }, createdAt: base });
  const lease = await store.acquireLease(runId, { owner: "owner-a", now: base, ttlMs: 30_000 });
  if (!lease.acquired) throw new Error("lease refused");
  await store.appendRecord(runId, { key: "step#charge", body: { charged: "old" } });
  await store.appendRecord(runId, { key: "signal#s-1", body: { approved: true } });
  await store.markLate(runId, "signal#s-1", "approval");
  expect(await store.finishRun(runId, { now: base + 1_000, status: "completed", result: "old", expect: { token: lease.lease.token } })).toBe(true);
  return runId;
}

export function retentionTests(store: () => JournalStore): void {
  it("keeps a finished run until its retention has passed, then deletes it with every record", async () => {
    const base = window();
    const runId = await finishedRun(store(), base, "retained");
    const finished = base + 1_000;

    expect((await purgeAll(store(), finished + RETENTION_MS - 1_000)).map((r) => r.runId)).not.toContain(runId);
    expect((await store().loadJournal(runId))?.records).toHaveLength(2);

    const purged = await purgeAll(store(), finished + RETENTION_MS + 1_000);
    expect(purged.filter((r) => r.runId === runId)).toEqual([{ runId, createdAt: base }]);
    expect(await store().getRun(runId)).toBeUndefined();
    expect(await store().loadJournal(runId)).toBeUndefined();
    // Idempotent: nothing left to purge, nothing reported twice.
    expect((await purgeAll(store(), finished + RETENTION_MS + 2_000)).map((r) => r.runId)).not.toContain(runId);
  });

  it("deletes the journals of every incarnation of a continued run (continueAsNew)", async () => {
    const base = window();
    const runId = freshId("continued");
    await store().createRun({ runId, workflow: "contract-flow", input: { page: 1 }, createdAt: base });
    const first = await store().acquireLease(runId, { owner: "owner-a", now: base, ttlMs: 30_000 });
    if (!first.acquired) throw new Error("lease refused");
    await store().appendRecord(runId, { key: "step#page", body: { page: 1 } });
    expect(await store().continueRun(runId, first.lease.token, { now: base + 10, input: { page: 2 }, incarnation: 2 })).toBe(true);
    const second = await store().acquireLease(runId, { owner: "owner-a", now: base + 20, ttlMs: 30_000 });
    if (!second.acquired) throw new Error("lease refused");
    await store().appendRecord(journalIdOf(runId, 2), { key: "step#page", body: { page: 2 } });
    expect(await store().finishRun(runId, { now: base + 1_000, status: "completed", expect: { token: second.lease.token } })).toBe(true);

    expect((await purgeAll(store(), base + 1_000 + RETENTION_MS + 1_000)).map((r) => r.runId)).toContain(runId);
    // The id starts afresh; a later continueAsNew of the new run finds its second journal empty.
    await store().createRun({ runId, workflow: "contract-flow", input: { page: 1 }, createdAt: base + RETENTION_MS * 2 });
    expect((await store().loadJournal(runId, { incarnation: 1 }))?.records).toEqual([]);
    expect((await store().loadJournal(runId, { incarnation: 2 }))?.records).toEqual([]);
  });

  it("never purges a run that has not finished, however old", async () => {
    const base = window();
    const running = freshId("old-running");
    await store().createRun({ runId: running, workflow: "contract-flow", input: {}, createdAt: base });
    await store().acquireLease(running, { owner: "owner-a", now: base, ttlMs: 30_000 });
    const suspended = freshId("old-suspended");
    await store().createRun({ runId: suspended, workflow: "contract-flow", input: {}, createdAt: base });
    const lease = await store().acquireLease(suspended, { owner: "owner-a", now: base, ttlMs: 30_000 });
    if (!lease.acquired) throw new Error("lease refused");
    await store().appendRecord(suspended, { key: "step#wait", body: { waiting: true } });
    await store().releaseLease(suspended, lease.lease.token, { now: base + 1, waitingFor: "signal:approval" });

    const purged = (await purgeAll(store(), base + 10 * RETENTION_MS)).map((r) => r.runId);
    expect(purged).not.toContain(running);
    expect(purged).not.toContain(suspended);
    expect((await store().getRun(running))?.status).toBe("running");
    expect((await store().loadJournal(suspended))?.records).toHaveLength(1);
  });

  it("a run id reused after retention starts afresh and sees nothing of the old run", async () => {
    const base = window();
    const runId = await finishedRun(store(), base, "reused");
    await purgeAll(store(), base + 1_000 + RETENTION_MS + 1_000);

    const later = base + RETENTION_MS + 5_000;
    const again = await store().createRun({ runId, workflow: "contract-flow", input: { life: 2 }, createdAt: later });
    expect(again).toEqual({
      created: true,
      run: { runId, workflow: "contract-flow", input: { life: 2 }, status: "pending", createdAt: later, updatedAt: later, wakeAt: later, leaseToken: 0, invocations: 0 },
    });
    expect((await store().loadJournal(runId))?.records).toEqual([]);
    // The old run's step is not adopted: the same key is a new write.
    expect(await store().appendRecord(runId, { key: "step#charge", body: { charged: "new" } })).toEqual({ written: true });
    expect((await store().loadJournal(runId))?.records).toEqual([{ key: "step#charge", body: { charged: "new" } }]);
  });

  it("two purges at once report each run once", async () => {
    const base = window();
    const ids = [await finishedRun(store(), base, "twice-a"), await finishedRun(store(), base, "twice-b")];
    const now = base + 1_000 + RETENTION_MS + 1_000;
    const [a, b] = await Promise.all([purgeAll(store(), now), purgeAll(store(), now)]);
    const mine = [...(a ?? []), ...(b ?? [])].filter((r) => ids.includes(r.runId)).map((r) => r.runId).sort();
    expect(mine).toEqual([...ids].sort());
    for (const id of ids) expect(await store().loadJournal(id)).toBeUndefined();
  });
}
