/** Contract: creating and reading runs, write-once records, late marks, and no aliasing. */
import { expect, it } from "vitest";
import type { JournalStore, StoredRecord } from "../../lib/ports.ts";
import { T, freshId, leasedRun, newRun, tryMutate } from "./helpers.ts";

const byKey = (a: StoredRecord, b: StoredRecord): number => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);

/** Every kind of JSON a record body or a run's input may hold. */
const RICH = {
  text: 'quotes " and \\ backslashes, newline\n, unicode ✓ 𝄞 日本',
  empty: "",
  int: 42,
  negative: -7,
  float: 3.141592653589793,
  big: 9_007_199_254_740_991,
  small: -0.000123,
  yes: true,
  no: false,
  nothing: null,
  list: [1, "two", { three: [3] }, [], {}],
  nested: { a: { b: { c: { d: ["deep"] } } } },
  emptyObject: {},
};

export function runAndRecordTests(store: () => JournalStore): void {
  it("createRun creates a pending run that is due at once", async () => {
    const runId = freshId("create");
    const res = await store().createRun({ runId, workflow: "order-flow", input: { sku: "A1", qty: 2 }, createdAt: T });
    const expected = {
      runId,
      workflow: "order-flow",
      input: { sku: "A1", qty: 2 },
      status: "pending",
      createdAt: T,
      updatedAt: T,
      wakeAt: T,
      leaseToken: 0,
      invocations: 0,
    };
    expect(res).toEqual({ created: true, run: expected });
    expect(await store().getRun(runId)).toEqual(expected);
    expect(res.run.lease).toBeUndefined();
    expect(res.run.finishedAt).toBeUndefined();
  });

  it("createRun of an existing id returns the existing run and changes nothing", async () => {
    const { runId } = await leasedRun(store(), "exists", "owner-a", T + 5);
    const before = await store().getRun(runId);
    const again = await store().createRun({ runId, workflow: "other-flow", input: { other: true }, createdAt: T + 99 });
    expect(again.created).toBe(false);
    expect(again.run).toEqual(before);
    expect(again.run.status).toBe("running");
    expect(again.run.input).toEqual({ label: "exists" });
    expect(await store().getRun(runId)).toEqual(before);
  });

  it("createRun keeps whether a parent's start created the run (child), through a lease and in a refused create's answer", async () => {
    const runId = freshId("child");
    const made = await store().createRun({ runId, workflow: "order-flow", input: {}, createdAt: T, child: true });
    expect(made).toMatchObject({ created: true, run: { child: true } });
    expect(await store().getRun(runId)).toMatchObject({ child: true });
    expect(await store().acquireLease(runId, { owner: "owner-a", now: T + 1, ttlMs: 30_000 })).toMatchObject({ acquired: true, run: { child: true } });
    expect(await store().createRun({ runId, workflow: "order-flow", input: {}, createdAt: T + 2 })).toMatchObject({ created: false, run: { child: true } });
    const top = freshId("top");
    await store().createRun({ runId: top, workflow: "order-flow", input: {}, createdAt: T });
    expect(await store().createRun({ runId: top, workflow: "order-flow", input: {}, createdAt: T + 2, child: true })).toMatchObject({ created: false });
    expect(await store().getRun(top)).not.toHaveProperty("child");
  });

  it("getRun and loadJournal return undefined for an unknown run", async () => {
    const runId = freshId("unknown");
    expect(await store().getRun(runId)).toBeUndefined();
    expect(await store().loadJournal(runId)).toBeUndefined();
  });

  it("loadJournal returns the run and every one of its records, and only its own", async () => {
    const runId = await newRun(store(), "journal");
    const other = await newRun(store(), "journal-other");
    await store().appendRecord(other, { key: "step#a", body: { other: true } });
    const empty = await store().loadJournal(runId);
    expect({ run: empty?.run, records: empty?.records }).toEqual({ run: await store().getRun(runId), records: [] });
    if (empty?.bytes !== undefined) expect(empty.bytes).toBe(0);
    const written: StoredRecord[] = [
      { key: "step#reserve", body: { type: "step", result: { hold: "h-1" } } },
      { key: "step#fraud_check", body: { type: "step", result: 0.2 } },
      { key: "signal#sig-1", body: { type: "signal", payload: { approved: true } }, lateFor: "approval" },
    ];
    for (const record of written) expect(await store().appendRecord(runId, record)).toEqual({ written: true });
    const journal = await store().loadJournal(runId);
    expect(journal?.run).toEqual(await store().getRun(runId));
    expect([...(journal?.records ?? [])].sort(byKey)).toEqual([...written].sort(byKey));
    // A store that tells the journal's size tells it exactly: keys and JSON bodies, in UTF-8.
    const size = written.reduce((n, r) => n + Buffer.byteLength(r.key) + Buffer.byteLength(JSON.stringify(r.body)), 0);
    if (journal?.bytes !== undefined) expect(journal.bytes).toBe(size);
  });

  it("record bodies, inputs, results and errors round-trip deeply equal", async () => {
    const runId = await newRun(store(), "roundtrip", T, RICH);
    await store().appendRecord(runId, { key: "step#rich", body: { rich: RICH } });
    await store().appendRecord(runId, { key: "step#list", body: { list: [RICH, RICH] } });
    const journal = await store().loadJournal(runId);
    expect(journal?.run.input).toEqual(RICH);
    expect(journal?.records.find((r) => r.key === "step#rich")?.body).toEqual({ rich: RICH });
    expect(journal?.records.find((r) => r.key === "step#list")?.body).toEqual({ list: [RICH, RICH] });

    expect(await store().finishRun(runId, { now: T + 1, status: "completed", result: RICH, expect: { neverInvoked: true } })).toBe(true);
    expect((await store().getRun(runId))?.result).toEqual(RICH);
    const failed = await newRun(store(), "roundtrip-error");
    const error = { name: "CardDeclined", message: "declined: \"insufficient\"", fields: { code: 51, retry: false }, stack: "at x\nat y" };
    expect(await store().finishRun(failed, { now: T + 1, status: "failed", error, expect: { neverInvoked: true } })).toBe(true);
    expect((await store().getRun(failed))?.error).toEqual(error);
  });

  it("appendRecord is write-once: a second write of a key returns the first and changes nothing", async () => {
    const runId = await newRun(store(), "once");
    const other = await newRun(store(), "once-other");
    expect(await store().appendRecord(runId, { key: "step#charge", body: { charge: "ch_1" } })).toEqual({ written: true });
    const second = await store().appendRecord(runId, { key: "step#charge", body: { charge: "ch_2" } });
    expect(second).toEqual({ written: false, existing: { key: "step#charge", body: { charge: "ch_1" } } });
    // The same key in another run is another record.
    expect(await store().appendRecord(other, { key: "step#charge", body: { charge: "ch_3" } })).toEqual({ written: true });
    expect((await store().loadJournal(runId))?.records).toEqual([{ key: "step#charge", body: { charge: "ch_1" } }]);
    expect((await store().loadJournal(other))?.records).toEqual([{ key: "step#charge", body: { charge: "ch_3" } }]);
  });

  it("markLate marks a record late for a wait, and is a no-op for a missing record", async () => {
    const runId = await newRun(store(), "late");
    await store().appendRecord(runId, { key: "signal#s-2", body: { type: "signal", signalId: "s-2" } });
    await store().markLate(runId, "signal#s-2", "approval");
    await store().markLate(runId, "signal#absent", "approval");
    await store().markLate(freshId("late-no-run"), "signal#s-2", "approval");
    expect((await store().loadJournal(runId))?.records).toEqual([
      { key: "signal#s-2", body: { type: "signal", signalId: "s-2" }, lateFor: "approval" },
    ]);
    const existing = await store().appendRecord(runId, { key: "signal#s-2", body: {} });
    expect(existing).toEqual({ written: false, existing: { key: "signal#s-2", body: { type: "signal", signalId: "s-2" }, lateFor: "approval" } });
  });

  it("does not let callers mutate stored state through arguments or returned objects", async () => {
    const input = { order: { sku: "A1" } };
    const runId = freshId("alias");
    const created = await store().createRun({ runId, workflow: "order-flow", input, createdAt: T });
    input.order.sku = "changed";
    tryMutate(() => {
      created.run.status = "failed";
      (created.run.input as typeof input).order.sku = "changed";
    });
    const body = { result: { items: ["a"] } };
    await store().appendRecord(runId, { key: "step#a", body });
    body.result.items.push("b");

    const read = await store().getRun(runId);
    tryMutate(() => {
      if (read) read.leaseToken = 99;
      (read?.input as typeof input).order.sku = "changed";
    });
    const journal = await store().loadJournal(runId);
    tryMutate(() => journal?.records.push({ key: "step#b", body: {} }));
    tryMutate(() => (journal?.records[0]?.body as typeof body).result.items.push("c"));
    const existing = await store().appendRecord(runId, { key: "step#a", body: {} });
    tryMutate(() => {
      if (!existing.written) (existing.existing.body as typeof body).result.items.push("d");
    });
    const acquired = await store().acquireLease(runId, { owner: "owner-a", now: T, ttlMs: 1_000 });
    tryMutate(() => {
      if (acquired.acquired && acquired.run.lease) acquired.run.lease.token = 99;
    });

    const after = await store().loadJournal(runId);
    expect(after?.run).toMatchObject({ status: "running", input: { order: { sku: "A1" } }, leaseToken: 1, lease: { token: 1 } });
    expect(after?.records).toEqual([{ key: "step#a", body: { result: { items: ["a"] } } }]);
  });
}
