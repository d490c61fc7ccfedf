/**
 * Contract: every operation is safe to retry after a lost response. Each test applies a write
 * through {@link LostResponseStore} in "retry" mode — the write is applied, its answer is lost,
 * the same request is sent again — and expects the answer a single, answered write gives. The
 * refusals that matter are kept: someone else's grant, release or record is still a conflict.
 */
import { expect, it } from "vitest";
import type { JournalStore } from "../../lib/ports.ts";
import { LostResponseStore } from "../support/lost-response-store.ts";
import { T, leasedRun, newRun } from "./helpers.ts";

const TTL = 30_000;

export function retryTests(store: () => JournalStore): void {
  const lossy = () => new LostResponseStore(store());

  it("a retried grant finds its own lease: acquired, the same token, counted once", async () => {
    const runId = await newRun(store(), "retry-grant");
    const res = await lossy().lose("acquireLease").store.acquireLease(runId, { owner: "inv-1", now: T, ttlMs: TTL });
    expect(res).toMatchObject({ acquired: true, lease: { owner: "inv-1", token: 1, expiresAt: T + TTL } });
    expect(await store().getRun(runId)).toMatchObject({ leaseToken: 1, invocations: 1, lease: { owner: "inv-1", token: 1 } });
    // Another owner is still refused.
    expect(await store().acquireLease(runId, { owner: "inv-2", now: T + 1, ttlMs: TTL })).toMatchObject({ acquired: false, reason: "held" });
  });

  it("a retried release finds the run released by its token: released, the wake time as stored, and the suspension as written", async () => {
    const { runId, token } = await leasedRun(store(), "retry-release", "inv-1");
    const res = await lossy().lose("releaseLease").store.releaseLease(runId, token, { now: T + 5, wakeAt: T + 60_000, waitingFor: "sleep:nap" });
    expect(res).toStrictEqual({ released: true, wakeAt: T + 60_000 });
    const run = await store().getRun(runId);
    expect(run).toMatchObject({ status: "suspended", wakeAt: T + 60_000, waitingFor: "sleep:nap", leaseToken: token });
    expect(run?.lease).toBeUndefined();
  });

  it("a retried release of a run marked while leased answers the mark's wake time as stored", async () => {
    const { runId, token } = await leasedRun(store(), "retry-release-marked", "inv-1");
    await store().markDue(runId, T + 3);
    const res = await lossy().lose("releaseLease").store.releaseLease(runId, token, { now: T + 5, wakeAt: T + 60_000, waitingFor: "sleep:nap" });
    expect(res).toStrictEqual({ released: true, wakeAt: T + 3 });
    expect(await store().getRun(runId)).toMatchObject({ status: "suspended", wakeAt: T + 3, waitingFor: "sleep:nap" });
  });

  it("a release by a stale token is still refused after another grant", async () => {
    const { runId, token } = await leasedRun(store(), "retry-release-stale", "inv-1");
    expect(await store().releaseLease(runId, token, { now: T + 5, waitingFor: "x" })).toStrictEqual({ released: true });
    expect((await store().acquireLease(runId, { owner: "inv-2", now: T + 6, ttlMs: TTL })).acquired).toBe(true);
    expect(await store().releaseLease(runId, token, { now: T + 7, waitingFor: "x" })).toStrictEqual({ released: false });
  });

  it("a retried finish finds the run finished by this update: true", async () => {
    const { runId, token } = await leasedRun(store(), "retry-finish", "inv-1");
    const ok = await lossy().lose("finishRun").store.finishRun(runId, { now: T + 9, status: "completed", result: { ok: 1 }, expect: { token } });
    expect(ok).toBe(true);
    expect(await store().getRun(runId)).toMatchObject({ status: "completed", result: { ok: 1 }, finishedAt: T + 9 });
    // A different finish (another time: a cancel that came later) is still refused.
    expect(await store().finishRun(runId, { now: T + 10, status: "cancelled", expect: { neverInvoked: true } })).toBe(false);
  });

  it("a retried finish of a run never invoked (a cancel before it started) answers true", async () => {
    const runId = await newRun(store(), "retry-cancel");
    expect(await lossy().lose("finishRun").store.finishRun(runId, { now: T + 3, status: "cancelled", expect: { neverInvoked: true } })).toBe(true);
    expect(await store().getRun(runId)).toMatchObject({ status: "cancelled" });
  });

  it("a retried append finds its own body: written; someone else's body is still the conflict", async () => {
    const runId = await newRun(store(), "retry-append");
    const body = { v: 1, at: T, type: "resolution", stepId: "approval", via: "signal", signalId: "s-1" };
    expect(await lossy().lose("appendRecord").store.appendRecord(runId, { key: "resolution#approval", body })).toEqual({ written: true });
    const other = { ...body, via: "timeout", signalId: undefined, at: T + 1 };
    const res = await store().appendRecord(runId, { key: "resolution#approval", body: other });
    expect(res.written).toBe(false);
    expect(!res.written && res.existing.body).toEqual(body);
  });

  it("a retried renewal answers true and keeps the lease", async () => {
    const { runId, token } = await leasedRun(store(), "retry-renew", "inv-1");
    expect(await lossy().lose("renewLease").store.renewLease(runId, token, T + 10, TTL)).toBe(true);
    expect(await store().getRun(runId)).toMatchObject({ lease: { token, expiresAt: T + 10 + TTL } });
  });

  it("markDue moves a suspended run's wake earlier, never later, and leaves finished runs alone", async () => {
    const { runId, token } = await leasedRun(store(), "due", "inv-1");
    await store().releaseLease(runId, token, { now: T + 2, waitingFor: "signal:approval" }); // no wake time
    expect((await store().listDueRuns(T + 100, 1000)).some((r) => r.runId === runId)).toBe(false);
    await lossy().lose("markDue").store.markDue(runId, T + 50);
    expect((await store().getRun(runId))?.wakeAt).toBe(T + 50);
    expect((await store().listDueRuns(T + 100, 1000)).some((r) => r.runId === runId)).toBe(true);
    await store().markDue(runId, T + 80);
    expect((await store().getRun(runId))?.wakeAt).toBe(T + 50);
    const last = await store().acquireLease(runId, { owner: "inv-2", now: T + 90, ttlMs: TTL });
    if (!last.acquired) throw new Error("no lease");
    await store().finishRun(runId, { now: T + 90, status: "cancelled", expect: { token: last.lease.token } });
    await store().markDue(runId, T + 10);
    expect((await store().getRun(runId))?.wakeAt).toBeUndefined();
  });

  it("markDue answers the transition it made: due, on-release, or none", async () => {
    const asleep = await leasedRun(store(), "due-answer", "inv-1");
    await store().releaseLease(asleep.runId, asleep.token, { now: T + 2, wakeAt: T + 20_000, waitingFor: "sleep:nap" });
    expect(await store().markDue(asleep.runId, T + 5)).toBe("due");
    expect(await store().markDue(asleep.runId, T + 9)).toBe("none"); // due by then already
    const held = await leasedRun(store(), "due-answer-leased", "inv-1");
    expect(await store().markDue(held.runId, T + 5)).toBe("on-release");
    expect(await store().markDue(held.runId, T + 9)).toBe("none"); // marked earlier already
    expect(await store().markDue(held.runId, T + 3)).toBe("on-release"); // earlier: moved
    // Read leased, released since (no mark): the caller's hint is wrong, and the answer says so.
    const raced = await leasedRun(store(), "due-answer-raced", "inv-1");
    await store().releaseLease(raced.runId, raced.token, { now: T + 2, waitingFor: "signal:__child" });
    expect(await store().markDue(raced.runId, T + 5, { token: raced.token })).toBe("due");
    expect((await store().getRun(raced.runId))?.wakeAt).toBe(T + 5);
    expect(await store().markDue("due-answer-no-such-run", T + 5)).toBe("none");
  });

  it("markDue on a leased run leaves its lease alone and makes its release due by then (the earlier of the two), once", async () => {
    const { runId, token } = await leasedRun(store(), "due-leased", "inv-1");
    await lossy().lose("markDue").store.markDue(runId, T + 40);
    await store().markDue(runId, T + 70); // later: the mark stays
    const leased = await store().getRun(runId);
    expect(leased).toMatchObject({ status: "running", wakeAt: T + TTL, dueOnRelease: T + 40, lease: { token, owner: "inv-1" } });
    expect(await store().renewLease(runId, token, T + 10, TTL)).toBe(true);
    expect((await store().getRun(runId))?.dueOnRelease).toBe(T + 40);
    // Released with no wake time (a wait for a signal): due by the mark, which is gone; the
    // retry, its first attempt applied, answers the mark's time as the run holds it.
    expect(await lossy().lose("releaseLease").store.releaseLease(runId, token, { now: T + 50, waitingFor: "signal:__child" })).toStrictEqual({ released: true, wakeAt: T + 40 });
    const released = await store().getRun(runId);
    expect(released).toMatchObject({ status: "suspended", wakeAt: T + 40, waitingFor: "signal:__child" });
    expect(released?.dueOnRelease).toBeUndefined();
    expect((await store().listDueRuns(T + 50, 1000)).some((r) => r.runId === runId)).toBe(true);

    // A release with an earlier wake time of its own keeps that one.
    const again = await store().acquireLease(runId, { owner: "inv-2", now: T + 60, ttlMs: TTL });
    if (!again.acquired) throw new Error("no lease");
    await store().markDue(runId, T + 500);
    expect(await store().releaseLease(runId, again.lease.token, { now: T + 70, wakeAt: T + 100, waitingFor: "sleep:nap" })).toStrictEqual({ released: true, wakeAt: T + 100 });
    expect(await store().getRun(runId)).toMatchObject({ wakeAt: T + 100 });
  });

  it("a grant, a continue and a finish clear a mark left by an earlier lease", async () => {
    const { runId, token } = await leasedRun(store(), "due-cleared", "inv-1");
    await store().markDue(runId, T + 5);
    // The holder died: the next grant (past the lease) reads the journal itself, so the mark is gone.
    const next = await store().acquireLease(runId, { owner: "inv-2", now: T + TTL + 1, ttlMs: TTL });
    if (!next.acquired) throw new Error("no lease");
    expect(next.run.dueOnRelease).toBeUndefined();
    expect(await store().releaseLease(runId, token, { now: T + TTL + 2, waitingFor: "x" })).toStrictEqual({ released: false }); // the old holder is fenced
    await store().markDue(runId, T + TTL + 3);
    expect(await store().continueRun(runId, next.lease.token, { now: T + TTL + 4, input: { n: 2 }, incarnation: 2 })).toBe(true);
    expect(await store().getRun(runId)).toMatchObject({ status: "pending", wakeAt: T + TTL + 4 });
    expect((await store().getRun(runId))?.dueOnRelease).toBeUndefined();
    const third = await store().acquireLease(runId, { owner: "inv-3", now: T + TTL + 5, ttlMs: TTL });
    if (!third.acquired) throw new Error("no lease");
    await store().markDue(runId, T + TTL + 6);
    expect(await store().finishRun(runId, { now: T + TTL + 7, status: "completed", result: 1, expect: { token: third.lease.token } })).toBe(true);
    const done = await store().getRun(runId);
    expect(done?.dueOnRelease).toBeUndefined();
    expect(done?.wakeAt).toBeUndefined();
  });
}
