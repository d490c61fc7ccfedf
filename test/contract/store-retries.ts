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

  it("a retried release finds the run released by its token: true, and the suspension as written", async () => {
    const { runId, token } = await leasedRun(store(), "retry-release", "inv-1");
    const ok = await lossy().lose("releaseLease").store.releaseLease(runId, token, { now: T + 5, wakeAt: T + 60_000, waitingFor: "sleep:nap" });
    expect(ok).toBe(true);
    const run = await store().getRun(runId);
    expect(run).toMatchObject({ status: "suspended", wakeAt: T + 60_000, waitingFor: "sleep:nap", leaseToken: token });
    expect(run?.lease).toBeUndefined();
  });

  it("a release by a stale token is still refused after another grant", async () => {
    const { runId, token } = await leasedRun(store(), "retry-release-stale", "inv-1");
    expect(await store().releaseLease(runId, token, { now: T + 5, waitingFor: "x" })).toBe(true);
    expect((await store().acquireLease(runId, { owner: "inv-2", now: T + 6, ttlMs: TTL })).acquired).toBe(true);
    expect(await store().releaseLease(runId, token, { now: T + 7, waitingFor: "x" })).toBe(false);
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

  it("markDue moves a suspended run's wake earlier, never later, and leaves other runs alone", async () => {
    const { runId, token } = await leasedRun(store(), "due", "inv-1");
    expect(await store().markDue(runId, T + 1)).toBeUndefined(); // running: untouched
    expect((await store().getRun(runId))?.wakeAt).toBe(T + TTL);
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
}
