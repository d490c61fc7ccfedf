/**
 * Contract: listing runs by status and by due wake time. The store may hold other tests' runs,
 * so these tests check the order of the whole listing and find their own runs inside it.
 */
import { expect, it } from "vitest";
import { InvalidCursorError } from "../../lib/core/errors.ts";
import type { JournalStore, RunMeta } from "../../lib/ports.ts";
import { T, freshId, leasedRun, listAll, newRun, newestFirst, randomBase } from "./helpers.ts";

function expectNewestFirst(runs: RunMeta[]): void {
  for (let i = 1; i < runs.length; i++) {
    const [prev, cur] = [runs[i - 1], runs[i]];
    if (prev && cur) expect(newestFirst(prev, cur), `${prev.runId} before ${cur.runId}`).toBeLessThan(0);
  }
}

export function listingTests(store: () => JournalStore): void {
  it("listRuns pages newest first (createdAt, then runId, descending) with an opaque cursor", async () => {
    // Far in the future, so these are likely the newest runs of a shared store.
    const base = randomBase(5_000_000_000_000, 1_000_000_000);
    const prefix = freshId("page");
    const ids = [`${prefix}-a`, `${prefix}-b`, `${prefix}-c`, `${prefix}-d`, `${prefix}-e`];
    const times = [base, base + 1, base + 1, base + 2, base + 3];
    await Promise.all(ids.map((runId, i) => store().createRun({ runId, workflow: "contract-flow", input: {}, createdAt: times[i] ?? base })));

    const all = await listAll(store(), {}, 2);
    expectNewestFirst(all);
    const mine = all.filter((r) => r.runId.startsWith(prefix)).map((r) => r.runId);
    // Equal createdAt (b, c): runId descending.
    expect(mine).toEqual([`${prefix}-e`, `${prefix}-d`, `${prefix}-c`, `${prefix}-b`, `${prefix}-a`]);
    expect(new Set(all.map((r) => r.runId)).size).toBe(all.length);

    const first = await store().listRuns({ limit: 1 });
    expect(first.runs).toHaveLength(1);
    expect(typeof first.cursor).toBe("string");
    const second = await store().listRuns({ limit: 1, ...(first.cursor ? { cursor: first.cursor } : {}) });
    expect(second.runs).toHaveLength(1);
    expect(second.runs[0]?.runId).not.toBe(first.runs[0]?.runId);
  });

  it("listRuns refuses a cursor it did not hand out with InvalidCursorError", async () => {
    await expect(store().listRuns({ cursor: "bm90LWEtY3Vyc29y" })).rejects.toBeInstanceOf(InvalidCursorError);
    await expect(store().listRuns({ cursor: "%%%" })).rejects.toBeInstanceOf(InvalidCursorError);
  });

  it("listRuns filters by status", async () => {
    const base = randomBase(4_000_000_000_000, 1_000_000_000);
    const pending = await newRun(store(), "status-pending", base);
    const { runId: running } = await leasedRun(store(), "status-running", "owner-a", base + 1);
    const { runId: completed, token } = await leasedRun(store(), "status-completed", "owner-a", base + 2);
    await store().finishRun(completed, { now: base + 3, status: "completed", result: null, expect: { token } });
    const { runId: suspended, token: t2 } = await leasedRun(store(), "status-suspended", "owner-a", base + 4);
    await store().releaseLease(suspended, t2, { now: base + 5, waitingFor: "signal:approval" });

    for (const [status, mine] of [
      ["pending", pending],
      ["running", running],
      ["completed", completed],
      ["suspended", suspended],
    ] as const) {
      const listed = await listAll(store(), { status }, 50);
      expectNewestFirst(listed);
      expect(listed.every((r) => r.status === status)).toBe(true);
      const ids = listed.map((r) => r.runId);
      expect(ids).toContain(mine);
      for (const other of [pending, running, completed, suspended]) if (other !== mine) expect(ids).not.toContain(other);
    }
    const found = (await listAll(store(), { status: "completed" }, 50)).find((r) => r.runId === completed);
    expect(found).toEqual(await store().getRun(completed));
  });

  it("listRuns returns 100 runs by default, with a cursor when there are more", async () => {
    const base = randomBase(3_000_000_000_000, 1_000_000_000);
    const prefix = freshId("default-page");
    await Promise.all(
      Array.from({ length: 101 }, (_, i) => store().createRun({ runId: `${prefix}-${String(i).padStart(3, "0")}`, workflow: "contract-flow", input: i, createdAt: base + i })),
    );
    const page = await store().listRuns({});
    expect(page.runs).toHaveLength(100);
    expect(typeof page.cursor).toBe("string");
    expectNewestFirst(page.runs);
  });

  it("listDueRuns returns unfinished runs whose wakeAt has passed, oldest first", async () => {
    // A time window of its own, far below every other test's times, so no other run is due in it.
    const base = randomBase(1_000_000, 1_000_000_000);
    const created: string[] = [];
    const at = async (label: string, createdAt: number): Promise<string> => {
      const runId = await newRun(store(), label, createdAt);
      created.push(runId);
      return runId;
    };
    try {
      const pending = await at("due-pending", base + 10);
      const sleeping = await at("due-sleeping", base + 1);
      const l1 = await store().acquireLease(sleeping, { owner: "owner-a", now: base + 2, ttlMs: 100 });
      await store().releaseLease(sleeping, l1.acquired ? l1.lease.token : -1, { now: base + 3, wakeAt: base + 5, waitingFor: "sleep:nap" });
      const waiting = await at("due-waiting", base + 1);
      const l2 = await store().acquireLease(waiting, { owner: "owner-a", now: base + 2, ttlMs: 100 });
      await store().releaseLease(waiting, l2.acquired ? l2.lease.token : -1, { now: base + 3, waitingFor: "signal:approval" });
      const finished = await at("due-finished", base + 1);
      await store().finishRun(finished, { now: base + 2, status: "cancelled", expect: { neverInvoked: true } });
      const later = await at("due-later", base + 100);
      const running = await at("due-running", base + 1);
      // A running run is due when its lease expires (its holder may have died).
      await store().acquireLease(running, { owner: "owner-a", now: base + 1, ttlMs: 19 });

      const now = base + 50;
      const due = await store().listDueRuns(now, 1_000);
      for (let i = 1; i < due.length; i++) expect(due[i]?.wakeAt ?? -Infinity).toBeGreaterThanOrEqual(due[i - 1]?.wakeAt ?? Infinity);
      expect(due.every((r) => r.wakeAt !== undefined && r.wakeAt <= now && ["pending", "queued", "running", "suspended"].includes(r.status))).toBe(true);
      const mine = due.filter((r) => created.includes(r.runId));
      expect(mine.map((r) => [r.runId, r.wakeAt])).toEqual([
        [sleeping, base + 5],
        [pending, base + 10],
        [running, base + 20],
      ]);
      expect(mine[0]).toEqual(await store().getRun(sleeping));
      expect(due.map((r) => r.runId)).not.toContain(later);

      const limited = await store().listDueRuns(now, 2);
      expect(limited).toHaveLength(2);
      expect(limited.map((r) => r.wakeAt)).toEqual(due.slice(0, 2).map((r) => r.wakeAt));
      expect((await store().listDueRuns(base + 4, 1_000)).filter((r) => created.includes(r.runId))).toEqual([]);
    } finally {
      // Finished runs are never due: leave nothing due behind for later suites on a shared store.
      for (const runId of created) await store().finishRun(runId, { now: base + 1_000, status: "cancelled", expect: { neverInvoked: true } });
    }
  });
}
