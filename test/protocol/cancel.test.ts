/**
 * Issue 17, the cancel faults, each as an exact interleaving on a real SQLite journal:
 *
 * - the race: `client.cancel` read a run that had never started, a worker took it, and the
 *   cancel then finished it (no token, "not finished" its only condition) — the worker's booking
 *   stood, and no compensation ran. A finish now says what it expects;
 * - a cancel written while a step body runs was seen only at the heartbeat (a third of the
 *   lease later), after further forward steps had started; now the body's own journal write sees it;
 * - once delivered, a `Promise.all` sibling kept going forward ("steps after it run normally");
 * - (soak seed 470717138) a cancel of a queued run ended it and then failed to take it out of its
 *   queue; retried, it found the run ended and left the entry for ever. Out of the queue first.
 */
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { CancelledError, durable } from "waymark";
import { flowScope } from "../../lib/core/flow-control.ts";
import { Counter, Empty } from "../core/helpers.ts";
import { Gates, within } from "../support/gates.ts";
import { PausingStore } from "../support/pausing-store.ts";
import { type SqliteLab, sqliteLab } from "../support/sqlite-lab.ts";

let lab: SqliteLab;
afterEach(() => lab?.close());

function tripFlow(name: string, gates: Gates, calls: Counter) {
  return durable({ name, input: Empty }, async (_in, step) => {
    const saga = step.saga();
    try {
      await step.run("book-flight", async () => {
        calls.hit("book-flight");
        return gates.wait("flight");
      });
      saga.add("cancel-flight", () => calls.hit("cancel-flight"));
      await step.run("book-hotel", () => calls.hit("book-hotel"));
      saga.add("cancel-hotel", () => calls.hit("cancel-hotel"));
      return "booked";
    } catch (err) {
      if (err instanceof CancelledError) await saga.compensate();
      throw err;
    }
  });
}

/**
 * Two runs of a workflow limited to one at a time per key: q1 holds the slot (its body waits on
 * its gate), q2 queued behind it. `holder` is q1's invocation.
 */
async function queuedBehindHolder(name: string) {
  const gates = new Gates();
  const flow = durable({ name, input: z.object({ key: z.string() }), concurrency: { key: (i) => i.key, limit: 1 } }, async (_in, step) =>
    step.run("work", () => gates.wait(step.runId)),
  );
  lab = sqliteLab([flow]);
  const client = lab.client();
  await client.start(flow, { runId: "q1", input: { key: "k" } });
  await client.start(flow, { runId: "q2", input: { key: "k" } });
  const holder = lab.engine("W", lab.store, { leaseTtlMs: 600_000 }).invoke("q1");
  await gates.started("q1");
  expect(await lab.engine("W2").invoke("q2")).toMatchObject({ status: "queued" });
  const scope = flowScope(name, "k");
  expect((await lab.store.peek(scope))?.runId).toBe("q2");
  return { gates, holder, scope };
}

describe("cancelling a run", () => {
  it("a worker that takes a never-started run between the cancel's read and its write is not overwritten: the cancel is asked of it, and the booking is undone", async () => {
    const gates = new Gates();
    const calls = new Counter();
    const flow = tripFlow("trip-race", gates, calls);
    lab = sqliteLab([flow]);
    const pausing = new PausingStore(lab.store);
    await lab.client().start(flow, { runId: "t1", input: {} });
    // The cancel reads the run (pending, never invoked), and is held just before its finish.
    const held = pausing.hold("finishRun", "before");
    const cancel = lab.client(pausing.store).cancel("t1", { reason: "customer withdrew" });
    await held.reached;
    // Meanwhile a worker takes the run and starts booking the flight.
    const worker = lab.engine("W", lab.store, { leaseTtlMs: 600_000 }).invoke("t1");
    await gates.started("flight");
    held.release();
    expect(await cancel).toEqual({ outcome: "requested", status: "running" });
    expect((await lab.store.getRun("t1"))?.status).toBe("running");
    gates.open("flight", 0, "AF123");
    expect(await within(10_000, "the worker", worker)).toMatchObject({ status: "cancelled", reason: "customer withdrew" });
    expect(calls.count("book-flight")).toBe(1);
    expect(calls.count("cancel-flight")).toBe(1);
    expect(calls.count("book-hotel")).toBe(0);
  });

  it("a cancel that arrives while a body runs is seen by that body's journal write: the next forward step never starts (no heartbeat needed)", async () => {
    const gates = new Gates();
    const calls = new Counter();
    const flow = tripFlow("trip-seen", gates, calls);
    lab = sqliteLab([flow]);
    await lab.client().start(flow, { runId: "t2", input: {} });
    // A lease of ten minutes: its heartbeat (a third of it) cannot be what notices the cancel.
    const worker = lab.engine("W", lab.store, { leaseTtlMs: 600_000 }).invoke("t2");
    await gates.started("flight");
    expect(await lab.client().cancel("t2", { reason: "changed plans" })).toEqual({ outcome: "requested", status: "running" });
    gates.open("flight", 0, "AF123");
    expect(await within(10_000, "the worker", worker)).toMatchObject({ status: "cancelled", reason: "changed plans" });
    expect(calls.count("book-hotel")).toBe(0);
    expect(calls.count("cancel-flight")).toBe(1);
  });

  it("once delivered, a branch still running forward stops at its next step; compensations run, once each", async () => {
    const gates = new Gates();
    const calls = new Counter();
    const flow = durable({ name: "two-legs", input: Empty }, async (_in, step) => {
      const saga = step.saga();
      try {
        await Promise.all(
          ["a", "b"].map(async (leg) => {
            await step.run(`book-${leg}`, async () => {
              calls.hit(`book-${leg}`);
              return gates.wait(leg);
            });
            saga.add(`undo-${leg}`, () => calls.hit(`undo-${leg}`));
            await step.run(`confirm-${leg}`, () => calls.hit(`confirm-${leg}`));
          }),
        );
        return "ok";
      } catch (err) {
        if (err instanceof CancelledError) await saga.compensate();
        throw err;
      }
    });
    lab = sqliteLab([flow]);
    await lab.client().start(flow, { runId: "t3", input: {} });
    const worker = lab.engine("W", lab.store, { leaseTtlMs: 600_000 }).invoke("t3");
    await gates.started("a");
    await gates.started("b");
    await lab.client().cancel("t3", { reason: "stop" });
    // Leg a's booking completes and its write sees the cancel: leg b's body, still running, is
    // aborted (recorded as cancelled, whatever it does later), and leg a goes no further.
    gates.open("a", 0, "A1");
    expect(await within(10_000, "the worker", worker)).toMatchObject({ status: "cancelled" });
    gates.open("b", 0, "B1"); // too late: its step is over
    expect(calls.count("confirm-a")).toBe(0);
    expect(calls.count("confirm-b")).toBe(0);
    expect(calls.count("undo-a")).toBe(1);
    expect(calls.count("undo-b")).toBe(0); // its booking never completed (recorded as cancelled)
  });

  it("a cancel answers what it did: cancelled (never started), requested, or already-ended", async () => {
    const gates = new Gates();
    const calls = new Counter();
    const flow = tripFlow("trip-answers", gates, calls);
    lab = sqliteLab([flow]);
    await lab.client().start(flow, { runId: "t4", input: {} });
    expect(await lab.client().cancel("t4")).toEqual({ outcome: "cancelled", status: "cancelled" });
    expect(await lab.client().cancel("t4")).toEqual({ outcome: "already-ended", status: "cancelled" });
    expect(await lab.engine("W").invoke("t4")).toEqual({ status: "finished" });
    expect(calls.calls).toEqual([]);
  });

  it("a queued run's cancel that fails half-way, retried, leaves nothing in the queue", async () => {
    const { gates, holder, scope } = await queuedBehindHolder("one-at-a-time");
    // The cancel's queue write fails once; the caller retries the cancel.
    const pausing = new PausingStore(lab.store);
    const dequeue = pausing.hold("dequeue", "before");
    const first = lab.client(pausing.store).cancel("q2", { reason: "no longer needed" });
    await dequeue.reached;
    dequeue.fail(new Error("the journal is unreachable"));
    await expect(first).rejects.toThrow(/unreachable/);
    await lab.client().cancel("q2", { reason: "no longer needed" });
    // Whatever the retry could do now, once the canceller's lease has lapsed the run ends
    // cancelled, and its queue holds nobody.
    lab.clock.advance(31_000);
    await lab.engine("W3").invoke("q2");
    expect((await lab.store.getRun("q2"))?.status).toBe("cancelled");
    expect(await lab.store.peek(scope)).toBeUndefined();
    gates.open("q1", 0, "done");
    expect(await within(60_000, "q1", holder)).toEqual({ status: "completed", result: "done" });
  });

  it("a queued run taken and handed back for a retry between the cancel's read and its lease is asked, not ended: its queue entry goes with it (flow story seed 2009132)", async () => {
    const { gates, holder, scope } = await queuedBehindHolder("one-at-a-time-retry");
    // The cancel reads q2 queued; its grant is held.
    const canceller = new PausingStore(lab.store);
    const granting = canceller.hold("acquireLease", "before");
    const cancel = lab.client(canceller.store).cancel("q2", { reason: "no longer needed" });
    await granting.reached;
    // Meanwhile an invocation takes q2 and fails before its admission (the journal unreachable):
    // it hands q2 back for a retry soon, waiting for "retry", and its entry stays in the queue.
    const faulty = new PausingStore(lab.store);
    const load = faulty.hold("loadJournal", "before");
    const invocation = lab.engine("W3", faulty.store).invoke("q2");
    await load.reached;
    load.fail(new Error("the journal is unreachable"));
    await expect(invocation).rejects.toThrow(/unreachable/);
    expect(await lab.store.getRun("q2")).toMatchObject({ status: "suspended", waitingFor: "retry" });
    granting.release();
    // The canceller's grant finds q2 waiting for no queue: nothing says where its entry is, so
    // it is asked (before: ended at once, the entry left behind for as long as the key is idle).
    expect(await cancel).toEqual({ outcome: "requested", status: "queued" });
    expect((await lab.store.peek(scope))?.runId).toBe("q2");
    // Its next invocation finds q1 holding the slot and the cancel requested: out of the queue, ended.
    expect(await lab.engine("W4").invoke("q2")).toMatchObject({ status: "cancelled" });
    expect(await lab.store.peek(scope)).toBeUndefined();
    gates.open("q1", 0, "done");
    expect(await within(60_000, "q1", holder)).toEqual({ status: "completed", result: "done" });
  });
});
