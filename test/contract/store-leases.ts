/** Contract: leases with fencing tokens, suspending and finishing runs. */
import { expect, it } from "vitest";
import type { JournalStore } from "../../lib/ports.ts";
import { T, freshId, leasedRun, newRun } from "./helpers.ts";

const TTL = 30_000;

export function leaseTests(store: () => JournalStore): void {
  it("a grant asked with dueBy refuses a suspended run not due by then as not-due, writing nothing; other runs are granted", async () => {
    const { runId, token } = await leasedRun(store(), "due-by");
    expect(await store().releaseLease(runId, token, { now: T + 10, wakeAt: T + 60_000, waitingFor: "sleep:nap" })).toEqual({ released: true, wakeAt: T + 60_000 });
    const asleep = await store().getRun(runId);
    const early = await store().acquireLease(runId, { owner: "dup", now: T + 20, ttlMs: TTL, dueBy: T + 59_999 });
    expect(early).toEqual({ acquired: false, reason: "not-due", run: asleep });
    expect(await store().getRun(runId)).toEqual(asleep);
    // Due by then (wakeAt at or before dueBy): granted.
    expect(await store().acquireLease(runId, { owner: "due", now: T + 30, ttlMs: TTL, dueBy: T + 60_000 })).toMatchObject({ acquired: true, lease: { owner: "due", token: 2 } });
    // A pending run is never refused so, whatever its wakeAt.
    const pending = await newRun(store(), "due-by-pending", T + 100_000);
    expect(await store().acquireLease(pending, { owner: "p", now: T, ttlMs: TTL, dueBy: T })).toMatchObject({ acquired: true });
    // Nor is a running run whose lease expired (its wakeAt is the lease's expiry).
    const { runId: lapsed } = await leasedRun(store(), "due-by-lapsed");
    expect(await store().acquireLease(lapsed, { owner: "q", now: T + TTL, ttlMs: TTL, dueBy: T })).toMatchObject({ acquired: true });
  });

  it("acquireLease grants token 1 on a new run and marks it running until the lease expires", async () => {
    const runId = await newRun(store(), "grant");
    const res = await store().acquireLease(runId, { owner: "owner-a", now: T + 10, ttlMs: TTL });
    const lease = { owner: "owner-a", token: 1, expiresAt: T + 10 + TTL };
    expect(res).toEqual({
      acquired: true,
      lease,
      run: {
        runId,
        workflow: "contract-flow",
        input: { label: "grant" },
        status: "running",
        createdAt: T,
        updatedAt: T + 10,
        wakeAt: T + 10 + TTL,
        lease,
        leaseToken: 1,
        invocations: 1,
      },
      emptyJournal: true,
    });
    expect(await store().getRun(runId)).toEqual(res.run);
  });

  it("says emptyJournal only on the first grant of a run whose journal holds no record: not after a record written before the run or outside a lease (markJournaled first), nor on a later grant", async () => {
    const grant = async (runId: string, now: number) => {
      const res = await store().acquireLease(runId, { owner: "o", now, ttlMs: TTL });
      if (!res.acquired) throw new Error(`refused: ${res.reason}`);
      return res;
    };
    // A record before the run (a child's parent record), then the run.
    const child = freshId("empty-child");
    await store().appendRecord(child, { key: "parent", body: { type: "parent", runId: "p" } });
    expect((await store().createRun({ runId: child, workflow: "contract-flow", input: null, createdAt: T })).created).toBe(true);
    expect(await grant(child, T)).not.toHaveProperty("emptyJournal");
    // A record written outside a lease to a run never invoked: marked first, as the protocol does.
    const signalled = await newRun(store(), "empty-signalled");
    await store().markJournaled(signalled);
    await store().markJournaled(signalled); // idempotent
    await store().appendRecord(signalled, { key: "signal#s1", body: { type: "signal", name: "go" } });
    expect(await grant(signalled, T)).not.toHaveProperty("emptyJournal");
    // The first grant says it; the next (the lease expired, nothing written) does not.
    const fresh = await newRun(store(), "empty-fresh");
    expect((await grant(fresh, T)).emptyJournal).toBe(true);
    expect(await grant(fresh, T + TTL)).not.toHaveProperty("emptyJournal");
    // Nothing for a run that is not there: no stub written.
    const missing = freshId("empty-missing");
    await store().markJournaled(missing);
    expect(await store().getRun(missing)).toBeUndefined();
  });

  it("acquireLease of an unknown run says missing", async () => {
    expect(await store().acquireLease(freshId("missing"), { owner: "owner-a", now: T, ttlMs: TTL })).toEqual({ acquired: false, reason: "missing" });
  });

  it("acquireLease refuses a lease held until after now, and returns the run as it is", async () => {
    const { runId } = await leasedRun(store(), "held", "owner-a", T);
    const before = await store().getRun(runId);
    const res = await store().acquireLease(runId, { owner: "owner-b", now: T + TTL - 1, ttlMs: TTL });
    expect(res).toEqual({ acquired: false, reason: "held", run: before });
    expect(await store().getRun(runId)).toEqual(before);
  });

  it("an expired lease can be taken by anyone, and the token still grows (fencing)", async () => {
    const { runId, token } = await leasedRun(store(), "expired", "owner-a", T);
    // Expired exactly at expiresAt: a lease holds only while expiresAt > now.
    const res = await store().acquireLease(runId, { owner: "owner-b", now: T + TTL, ttlMs: TTL });
    expect(res.acquired && res.lease).toEqual({ owner: "owner-b", token: token + 1, expiresAt: T + 2 * TTL });
    expect(res.run).toMatchObject({ status: "running", leaseToken: 2, invocations: 2, updatedAt: T + TTL, wakeAt: T + 2 * TTL });
    const now = T + TTL + 5;
    expect(await store().renewLease(runId, token, now, TTL)).toBe(false);
    expect(await store().releaseLease(runId, token, { now, wakeAt: now })).toEqual({ released: false });
    expect(await store().finishRun(runId, { now, status: "completed", result: 1, expect: { token } })).toBe(false);
    expect(await store().getRun(runId)).toEqual(res.run);
  });

  it("ifToken takes over an unexpired lease only while that token is still current", async () => {
    const { runId, token } = await leasedRun(store(), "iftoken", "owner-a", T);
    const wrong = await store().acquireLease(runId, { owner: "owner-b", now: T + 1, ttlMs: TTL, ifToken: token + 1 });
    expect(wrong).toMatchObject({ acquired: false, reason: "held", run: { lease: { owner: "owner-a", token } } });
    const taken = await store().acquireLease(runId, { owner: "owner-b", now: T + 2, ttlMs: TTL, ifToken: token });
    expect(taken).toMatchObject({ acquired: true, lease: { owner: "owner-b", token: token + 1, expiresAt: T + 2 + TTL } });
    const late = await store().acquireLease(runId, { owner: "owner-c", now: T + 3, ttlMs: TTL, ifToken: token });
    expect(late).toMatchObject({ acquired: false, reason: "held", run: { lease: { owner: "owner-b", token: token + 1 } } });
  });

  it("acquireLease of a finished run says finished, with the run", async () => {
    const { runId, token } = await leasedRun(store(), "finished");
    await store().finishRun(runId, { now: T + 1, status: "completed", result: "ok", expect: { token } });
    const res = await store().acquireLease(runId, { owner: "owner-b", now: T + 2, ttlMs: TTL });
    expect(res).toEqual({ acquired: false, reason: "finished", run: await store().getRun(runId) });
    expect(res.run?.status).toBe("completed");
  });

  it("renewLease moves the lease expiry and wakeAt while the token is current", async () => {
    const { runId, token } = await leasedRun(store(), "renew");
    expect(await store().renewLease(runId, token, T + 1_000, 60_000)).toBe(true);
    expect(await store().getRun(runId)).toMatchObject({ lease: { owner: "owner-a", token, expiresAt: T + 61_000 }, wakeAt: T + 61_000, leaseToken: token });
    expect(await store().renewLease(runId, token + 1, T + 2_000, 60_000)).toBe(false);
    expect(await store().renewLease(freshId("renew-missing"), 1, T, 60_000)).toBe(false);
    expect((await store().getRun(runId))?.lease?.expiresAt).toBe(T + 61_000);
  });

  it("releaseLease suspends the run with its wake time and what it waits for, and answers that wake time", async () => {
    const { runId, token } = await leasedRun(store(), "release");
    expect(await store().releaseLease(runId, token, { now: T + 5, wakeAt: T + 600_000, waitingFor: "sleep:cool-off" })).toEqual({ released: true, wakeAt: T + 600_000 });
    const run = await store().getRun(runId);
    expect(run).toMatchObject({ status: "suspended", wakeAt: T + 600_000, waitingFor: "sleep:cool-off", updatedAt: T + 5, leaseToken: token, invocations: 1 });
    expect(run?.lease).toBeUndefined();
    // Released: the token can no longer renew. Releasing again is a retry of a release that
    // already happened (its answer may have been lost): it says so with the wake time as stored,
    // and changes nothing.
    expect(await store().renewLease(runId, token, T + 6, TTL)).toBe(false);
    expect(await store().releaseLease(runId, token, { now: T + 6 })).toEqual({ released: true, wakeAt: T + 600_000 });
    expect(await store().getRun(runId)).toEqual(run);

    const again = await store().acquireLease(runId, { owner: "owner-b", now: T + 7, ttlMs: TTL });
    expect(again.acquired && again.lease.token).toBe(token + 1);
    expect(again.run?.waitingFor).toBe("sleep:cool-off");
    // Without wakeAt or waitingFor, both are removed (a wait only a signal can end).
    expect(await store().releaseLease(runId, token + 1, { now: T + 8 })).toStrictEqual({ released: true });
    const waiting = await store().getRun(runId);
    expect(waiting).toMatchObject({ status: "suspended", updatedAt: T + 8, leaseToken: token + 1, invocations: 2 });
    expect(waiting?.wakeAt).toBeUndefined();
    expect(waiting?.waitingFor).toBeUndefined();
  });

  it("releaseLease with a stale token changes nothing", async () => {
    const { runId, token } = await leasedRun(store(), "stale-release");
    const before = await store().getRun(runId);
    expect(await store().releaseLease(runId, token - 1, { now: T + 1, wakeAt: T + 2, waitingFor: "x" })).toStrictEqual({ released: false });
    expect(await store().releaseLease(freshId("release-missing"), 1, { now: T + 1 })).toStrictEqual({ released: false });
    expect(await store().getRun(runId)).toEqual(before);
  });

  it("releaseLease answers the wake time it left: its own, a mark made while the lease was held if earlier, none for a wait with neither; refused once the lease is gone", async () => {
    // Plain: the release's own wake time.
    const plain = await leasedRun(store(), "answer-plain");
    expect(await store().releaseLease(plain.runId, plain.token, { now: T + 1, wakeAt: T + 20_000, waitingFor: "sleep:nap" })).toStrictEqual({ released: true, wakeAt: T + 20_000 });
    // Marked while held (a deliverer's markDue): the mark, earlier than the release's own.
    const marked = await leasedRun(store(), "answer-marked");
    await store().markDue(marked.runId, T + 3);
    expect(await store().releaseLease(marked.runId, marked.token, { now: T + 4, wakeAt: T + 20_000, waitingFor: "sleep:nap" })).toStrictEqual({ released: true, wakeAt: T + 3 });
    expect(await store().getRun(marked.runId)).toMatchObject({ status: "suspended", wakeAt: T + 3 });
    // A wait with no wake time of its own, marked: the mark; unmarked: no wake time at all.
    const waiting = await leasedRun(store(), "answer-wait-marked");
    await store().markDue(waiting.runId, T + 2);
    expect(await store().releaseLease(waiting.runId, waiting.token, { now: T + 4, waitingFor: "signal:approval" })).toStrictEqual({ released: true, wakeAt: T + 2 });
    const idle = await leasedRun(store(), "answer-wait");
    expect(await store().releaseLease(idle.runId, idle.token, { now: T + 4, waitingFor: "signal:approval" })).toStrictEqual({ released: true });
    // A mark later than the release's own wake time leaves the release's.
    const later = await leasedRun(store(), "answer-later-mark");
    await store().markDue(later.runId, T + 50_000);
    expect(await store().releaseLease(later.runId, later.token, { now: T + 4, wakeAt: T + 20_000, waitingFor: "sleep:nap" })).toStrictEqual({ released: true, wakeAt: T + 20_000 });
    // The lease lapsed and another holder took it: refused, nothing changed.
    const lapsed = await leasedRun(store(), "answer-lapsed", "owner-a", T);
    await store().markDue(lapsed.runId, T + 5);
    expect((await store().acquireLease(lapsed.runId, { owner: "owner-b", now: T + TTL, ttlMs: TTL })).acquired).toBe(true);
    const taken = await store().getRun(lapsed.runId);
    expect(await store().releaseLease(lapsed.runId, lapsed.token, { now: T + TTL + 1, wakeAt: T + TTL + 2, waitingFor: "sleep:nap" })).toStrictEqual({ released: false });
    expect(await store().getRun(lapsed.runId)).toEqual(taken);
  });

  it("finishRun with the current token completes the run and frees it", async () => {
    const { runId, token } = await leasedRun(store(), "finish");
    expect(await store().renewLease(runId, token, T + 1, TTL)).toBe(true);
    expect(await store().finishRun(runId, { now: T + 9, status: "completed", result: { shipped: true }, expect: { token } })).toBe(true);
    const run = await store().getRun(runId);
    expect(run).toMatchObject({ status: "completed", result: { shipped: true }, finishedAt: T + 9, updatedAt: T + 9, leaseToken: token, invocations: 1 });
    expect(run?.lease).toBeUndefined();
    expect(run?.wakeAt).toBeUndefined();
    expect(run?.waitingFor).toBeUndefined();
    expect(run?.error).toBeUndefined();
  });

  it("a renewal delayed in transit never moves the expiry back (it answers renewed: the lease is still this token's, and longer)", async () => {
    const { runId, token } = await leasedRun(store(), "renew-late");
    expect(await store().renewLease(runId, token, T + 20_000, TTL)).toBe(true);
    expect(await store().renewLease(runId, token, T + 5_000, TTL)).toBe(true); // sent before, arrives after
    expect(await store().getRun(runId)).toMatchObject({ lease: { token, expiresAt: T + 20_000 + TTL }, wakeAt: T + 20_000 + TTL });
    // Another holder cannot take it meanwhile: it is not expired at T + 40 s.
    expect(await store().acquireLease(runId, { owner: "owner-z", now: T + 40_000, ttlMs: TTL })).toMatchObject({ acquired: false, reason: "held" });
  });

  it("finishRun of a suspended run (under a new lease) removes its wake time and what it waited for", async () => {
    const { runId, token } = await leasedRun(store(), "finish-suspended");
    await store().releaseLease(runId, token, { now: T + 1, wakeAt: T + 100, waitingFor: "signal:approval" });
    const again = await store().acquireLease(runId, { owner: "owner-b", now: T + 2, ttlMs: TTL });
    if (!again.acquired) throw new Error("no second lease");
    expect(await store().finishRun(runId, { now: T + 2, status: "cancelled", expect: { token: again.lease.token } })).toBe(true);
    const run = await store().getRun(runId);
    expect(run).toMatchObject({ status: "cancelled", finishedAt: T + 2, leaseToken: again.lease.token });
    expect(run?.wakeAt).toBeUndefined();
    expect(run?.waitingFor).toBeUndefined();
  });

  it("a finish that expects a run never invoked ends a fresh run, and refuses one that was ever leased (no finish regardless)", async () => {
    const fresh = await newRun(store(), "cancel-fresh");
    expect(await store().finishRun(fresh, { now: T + 3, status: "cancelled", expect: { neverInvoked: true } })).toBe(true);
    expect(await store().getRun(fresh)).toMatchObject({ status: "cancelled", finishedAt: T + 3, invocations: 0 });
    // Leased now: the holder is never overwritten.
    const { runId, token } = await leasedRun(store(), "cancel-leased");
    expect(await store().finishRun(runId, { now: T + 3, status: "cancelled", expect: { neverInvoked: true } })).toBe(false);
    expect(await store().getRun(runId)).toMatchObject({ status: "running", lease: { token } });
    // Released again (suspended, no lease): it was invoked, so still refused.
    await store().releaseLease(runId, token, { now: T + 4, wakeAt: T + 5 });
    expect(await store().finishRun(runId, { now: T + 5, status: "cancelled", expect: { neverInvoked: true } })).toBe(false);
    expect((await store().getRun(runId))?.status).toBe("suspended");
    // A finish under a token fences every other holder.
    const again = await store().acquireLease(runId, { owner: "owner-c", now: T + 6, ttlMs: TTL });
    if (!again.acquired) throw new Error("no second lease");
    expect(await store().finishRun(runId, { now: T + 6, status: "cancelled", expect: { token: again.lease.token } })).toBe(true);
    expect(await store().renewLease(runId, again.lease.token, T + 7, TTL)).toBe(false);
    expect(await store().finishRun(runId, { now: T + 7, status: "completed", expect: { token } })).toBe(false);
  });

  it("finishRun records a failure's error; a finished run cannot be finished again", async () => {
    const { runId, token } = await leasedRun(store(), "fail");
    const error = { name: "StepFailedError", message: "step \"charge\" failed", fields: { stepId: "charge", attempts: 3 } };
    expect(await store().finishRun(runId, { now: T + 1, status: "failed", error, expect: { token } })).toBe(true);
    const failed = await store().getRun(runId);
    expect(failed).toMatchObject({ status: "failed", error, finishedAt: T + 1 });
    expect(failed?.result).toBeUndefined();
    expect(await store().finishRun(runId, { now: T + 2, status: "completed", result: "late", expect: { neverInvoked: true } })).toBe(false);
    expect(await store().finishRun(runId, { now: T + 2, status: "cancelled", expect: { token } })).toBe(false);
    expect(await store().finishRun(freshId("finish-missing"), { now: T, status: "cancelled", expect: { neverInvoked: true } })).toBe(false);
    expect(await store().getRun(runId)).toEqual(failed);
  });

  it("finishRun with a token refuses a run that holds no lease", async () => {
    const runId = await newRun(store(), "finish-unleased");
    expect(await store().finishRun(runId, { now: T + 1, status: "completed", expect: { token: 0 } })).toBe(false);
    expect((await store().getRun(runId))?.status).toBe("pending");
  });
}
