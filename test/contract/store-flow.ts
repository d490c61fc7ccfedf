/** Contract: flow control's slots and queue (`durable({ concurrency })`). */
import { expect, it } from "vitest";
import type { JournalStore } from "../../lib/ports.ts";
import { LostResponseStore } from "../support/lost-response-store.ts";
import { T, freshId, leasedRun, listAll, randomBase } from "./helpers.ts";

/** A run per label, each released as queued for `scope` (as admission leaves a run before it enqueues it): their ids by label. */
async function queuedRuns<K extends string>(store: JournalStore, scope: string, ...labels: K[]): Promise<Record<K, string>> {
  const runs = {} as Record<K, string>;
  for (const label of labels) {
    const { runId, token } = await leasedRun(store, label);
    expect(await store.releaseLease(runId, token, { now: T + 1, wakeAt: T + 30_000, waitingFor: `queued:${scope}`, status: "queued" })).toMatchObject({ released: true });
    runs[label] = runId;
  }
  return runs;
}

export function flowTests(store: () => JournalStore): void {
  it("takeSlot grants at most `limit` holders; a holder keeps its slot; a freed or expired slot is taken again", async () => {
    const scope = freshId("scope");
    expect(await store().takeSlot(scope, 2, { runId: "a", expiresAt: T + 100 }, T)).toBe(true);
    expect(await store().takeSlot(scope, 2, { runId: "b", expiresAt: T + 100 }, T)).toBe(true);
    expect(await store().takeSlot(scope, 2, { runId: "c", expiresAt: T + 100 }, T)).toBe(false);
    // A holder asking again (a retry, or a renewal) keeps its slot and moves its expiry.
    expect(await new LostResponseStore(store()).lose("takeSlot").store.takeSlot(scope, 2, { runId: "a", expiresAt: T + 500 }, T + 50)).toBe(true);
    expect(await store().takeSlot(scope, 2, { runId: "c", expiresAt: T + 300 }, T + 60)).toBe(false);
    await store().freeSlot(scope, "b");
    await store().freeSlot(scope, "b"); // idempotent
    expect(await store().takeSlot(scope, 2, { runId: "c", expiresAt: T + 300 }, T + 70)).toBe(true);
    // b's turn is gone; a crashed holder's slot (c's, expired at T + 300) is recovered.
    expect(await store().takeSlot(scope, 2, { runId: "d", expiresAt: T + 900 }, T + 200)).toBe(false);
    expect(await store().takeSlot(scope, 2, { runId: "d", expiresAt: T + 900 }, T + 300)).toBe(true);
    // Another scope is independent.
    expect(await store().takeSlot(freshId("other"), 1, { runId: "c", expiresAt: T + 100 }, T)).toBe(true);
  });

  it("the queue gives runs back in order, each once, and enqueueing again changes nothing", async () => {
    const scope = freshId("queue");
    const { r1, r2, r3 } = await queuedRuns(store(), scope, "r1", "r2", "r3");
    await store().enqueue(scope, r2, T + 2);
    await store().enqueue(scope, r1, T + 1);
    await new LostResponseStore(store()).lose("enqueue").store.enqueue(scope, r3, T + 3);
    await store().enqueue(scope, r1, T + 1);
    const out = await Promise.all([store().dequeue(scope), store().dequeue(scope)]);
    expect(out.sort()).toEqual([r1, r2].sort());
    expect(await store().dequeue(scope)).toBe(r3);
    expect(await store().dequeue(scope)).toBeUndefined();
  });

  it("peek shows the first queued run and leaves it; dequeue(scope, run) takes that run off wherever it is, once", async () => {
    const scope = freshId("peek");
    const { r1, r2, r3 } = await queuedRuns(store(), scope, "r1", "r2", "r3");
    expect(await store().peek(scope)).toBeUndefined();
    await store().enqueue(scope, r2, T + 2);
    await store().enqueue(scope, r3, T + 3);
    await store().enqueue(scope, r1, T + 1);
    expect(await store().peek(scope)).toEqual({ runId: r1, at: T + 1 });
    expect(await store().peek(scope)).toEqual({ runId: r1, at: T + 1 }); // still there
    expect(await store().dequeue(scope, { runId: r2, at: T + 2 })).toBe(r2); // from the middle
    expect(await store().dequeue(scope, { runId: r2, at: T + 2 })).toBeUndefined(); // once
    expect(await store().dequeue(scope, { runId: "nobody", at: T })).toBeUndefined();
    expect(await store().dequeue(scope, { runId: r3, at: T + 9 })).toBeUndefined(); // not queued at that time
    // A lost answer: the retry finds it gone, and it is gone.
    expect(await new LostResponseStore(store()).lose("dequeue").store.dequeue(scope, { runId: r1, at: T + 1 })).toBeUndefined();
    expect(await store().peek(scope)).toEqual({ runId: r3, at: T + 3 });
    const racing = await Promise.all([store().dequeue(scope, { runId: r3, at: T + 3 }), store().dequeue(scope, { runId: r3, at: T + 3 })]);
    expect(racing.filter((r) => r === r3)).toHaveLength(1);
    expect(await store().peek(scope)).toBeUndefined();
  });

  it("enqueue adds nothing for a run that has ended, even after a lost answer; a live run is queued", async () => {
    const scope = freshId("ended");
    const { live, ended } = await queuedRuns(store(), scope, "live", "ended");
    const again = await store().acquireLease(ended, { owner: "owner-b", now: T + 5, ttlMs: 30_000 });
    if (!again.acquired) throw new Error("lease refused");
    expect(await store().finishRun(ended, { now: T + 10, status: "completed", result: 1, expect: { token: again.lease.token } })).toBe(true);
    await new LostResponseStore(store()).lose("enqueue").store.enqueue(scope, ended, T);
    await store().enqueue(scope, live, T + 1);
    expect(await store().dequeue(scope)).toBe(live); // before: the ended run, first in line
    expect(await store().peek(scope)).toBeUndefined();
  });

  it("enqueue adds only a run that waits in that queue: none that is leased again (a canceller, the next invocation), waits for another, or does not exist", async () => {
    const scope = freshId("waits");
    const { leasedAgain, elsewhere, waiting } = await queuedRuns(store(), scope, "leasedAgain", "elsewhere", "waiting");
    // Taken again since its release as queued (a canceller's lease, or the next invocation's).
    const taken = await store().acquireLease(leasedAgain, { owner: "cancel:x", now: T + 5, ttlMs: 30_000 });
    expect(taken.acquired).toBe(true);
    // Released as queued for another scope.
    const other = await store().acquireLease(elsewhere, { owner: "owner-b", now: T + 5, ttlMs: 30_000 });
    if (!other.acquired) throw new Error("lease refused");
    await store().releaseLease(elsewhere, other.lease.token, { now: T + 6, wakeAt: T + 30_000, waitingFor: `queued:${freshId("other")}`, status: "queued" });
    await new LostResponseStore(store()).lose("enqueue").store.enqueue(scope, leasedAgain, T);
    await store().enqueue(scope, elsewhere, T);
    await store().enqueue(scope, freshId("missing"), T);
    await new LostResponseStore(store()).lose("enqueue").store.enqueue(scope, waiting, T + 1);
    expect(await store().dequeue(scope)).toBe(waiting); // before: the run a canceller held, first in line
    expect(await store().peek(scope)).toBeUndefined();
  });

  it("a holder's slot never moves to an earlier expiry: a late retry or a paused holder keeps it, and it stays held", async () => {
    const scope = freshId("later");
    expect(await store().takeSlot(scope, 1, { runId: "h", expiresAt: T + 100 }, T)).toBe(true);
    expect(await store().takeSlot(scope, 1, { runId: "h", expiresAt: T + 500 }, T + 50)).toBe(true); // renewed
    // An invocation paused since T asks with the expiry it computed then: held, and not shortened.
    expect(await new LostResponseStore(store()).lose("takeSlot").store.takeSlot(scope, 0, { runId: "h", expiresAt: T + 100 }, T + 200)).toBe(true);
    expect(await store().takeSlot(scope, 1, { runId: "h", expiresAt: T + 100 }, T + 200)).toBe(true);
    expect((await store().slots(scope)).map((s) => [s.runId, s.expiresAt])).toEqual([["h", T + 500]]);
    expect(await store().takeSlot(scope, 1, { runId: "x", expiresAt: T + 900 }, T + 300)).toBe(false); // before: taken, h's slot cut to T + 100
    expect(await store().takeSlot(scope, 1, { runId: "x", expiresAt: T + 900 }, T + 500)).toBe(true);
  });

  it("takeSlot with limit 0 keeps a slot the run holds (one handed to it) and takes none", async () => {
    const scope = freshId("handoff");
    expect(await store().takeSlot(scope, 0, { runId: "h", expiresAt: T + 100 }, T)).toBe(false); // nothing held, nothing taken
    expect(await store().takeSlot(scope, 1, { runId: "h", expiresAt: T + 100 }, T)).toBe(true); // handed to h
    expect(await store().takeSlot(scope, 1, { runId: "x", expiresAt: T + 900 }, T + 10)).toBe(false);
    expect(await store().takeSlot(scope, 0, { runId: "h", expiresAt: T + 500 }, T + 20)).toBe(true); // h comes: it holds it
    expect(await store().takeSlot(scope, 1, { runId: "x", expiresAt: T + 900 }, T + 200)).toBe(false); // its expiry moved
    expect(await store().takeSlot(scope, 0, { runId: "x", expiresAt: T + 900 }, T + 600)).toBe(false); // even expired, limit 0 takes none
    expect(await store().takeSlot(scope, 1, { runId: "x", expiresAt: T + 900 }, T + 600)).toBe(true);
  });

  it("a run released as queued: status queued, listed by it, due for the watchdog, made due earlier, granted again; a retried release answers true", async () => {
    // A time window of its own, below the other tests' times and above listDueRuns' own window.
    const base = randomBase(2_000_000_000, 1_000_000_000);
    const { runId, token } = await leasedRun(store(), "queued", "owner-a", base);
    const lost = new LostResponseStore(store()).lose("releaseLease");
    expect(await lost.store.releaseLease(runId, token, { now: base + 1, wakeAt: base + 30_000, waitingFor: "queued:wf:k", status: "queued" })).toStrictEqual({ released: true, wakeAt: base + 30_000 });
    expect(await store().getRun(runId)).toMatchObject({ status: "queued", waitingFor: "queued:wf:k", wakeAt: base + 30_000 });
    expect(await store().getRun(runId)).not.toHaveProperty("lease");
    const listed = await listAll(store(), { status: "queued" }, 100);
    expect(listed.map((r) => r.runId)).toContain(runId);
    expect(listed.every((r) => r.status === "queued")).toBe(true);
    expect((await listAll(store(), { status: "suspended" }, 100)).map((r) => r.runId)).not.toContain(runId);
    await store().markDue(runId, base + 10);
    expect((await store().getRun(runId))?.wakeAt).toBe(base + 10);
    expect((await store().listDueRuns(base + 10, 1000)).map((r) => r.runId)).toContain(runId);
    const again = await store().acquireLease(runId, { owner: "owner-b", now: base + 20, ttlMs: 1_000 });
    expect(again).toMatchObject({ acquired: true, run: { status: "running" } });
    await store().finishRun(runId, { now: base + 30, status: "cancelled", expect: { neverInvoked: true } });
  });

  it("markLatest keeps the latest start by time (ties by run id), whatever order the writes come in", async () => {
    const scope = freshId("latest");
    expect(await store().latest(scope)).toBeUndefined();
    await store().markLatest(scope, "r2", T + 2);
    await store().markLatest(scope, "r1", T + 1); // late write of an earlier start: ignored
    expect(await store().latest(scope)).toBe("r2");
    await new LostResponseStore(store()).lose("markLatest").store.markLatest(scope, "r3", T + 3);
    expect(await store().latest(scope)).toBe("r3");
    await store().markLatest(scope, "r0", T + 3); // a tie goes to the greater run id
    expect(await store().latest(scope)).toBe("r3");
  });
}
