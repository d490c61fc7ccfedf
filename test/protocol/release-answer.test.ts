/**
 * The release answers the run's wake time, and the invocation reads nothing after it (issue 19).
 * A signal delivered while an invocation holds the lease (its record, then `markDue`: the run is
 * marked `dueOnRelease`, and the deliverer's wake finds the run busy and is dropped), or a
 * cancellation requested while the run goes to sleep: the release leaves the run due at the mark,
 * answers that time, and the invocation wakes the run at it — no wake lost, no read after the
 * release. On the memory store and on a real SQLite file.
 */
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { type AnyWorkflow, Client, createRegistry, durable, Engine, type JournalStore, type ReleaseResult, type Wake, type WakeQueue } from "waymark";
import { MemoryJournalStore, MemoryWakeQueue, VirtualClock } from "waymark/testing";
import { interceptStore, type StoreOp } from "../support/intercept-store.ts";
import { PausingStore } from "../support/pausing-store.ts";
import { sqliteLab } from "../support/sqlite-lab.ts";

const waiting = durable({ name: "answer-wait", input: z.object({}), signals: { approval: z.object({ approver: z.string() }) } }, async (_in, step) => {
  await step.run("prep", () => 1);
  const decision = await step.waitForSignal("approval");
  return decision.received ? decision.payload.approver : "none";
});

const sleeping = durable({ name: "answer-sleep", input: z.object({}) }, async (_in, step) => {
  await step.run("prep", () => 1);
  await step.sleep("nap", "20s");
  return step.run("after", () => 2);
});

interface Lab {
  store: JournalStore;
  wakes: WakeQueue;
  clock: VirtualClock;
  close(): void;
}

const labs: Array<[string, () => Lab]> = [
  ["memory", () => ({ store: new MemoryJournalStore(), wakes: new MemoryWakeQueue(), clock: new VirtualClock(Date.UTC(2026, 10, 30, 12)), close: () => {} })],
  [
    "SQLite",
    () => {
      const lab = sqliteLab([]);
      return { store: lab.store, wakes: lab.wakes, clock: lab.clock, close: () => lab.close() };
    },
  ],
];

let open: Lab | undefined;
afterEach(() => {
  open?.close();
  open = undefined;
});

/**
 * The holder's invocation runs on a store that pauses its release and records every call after
 * it; a deliverer's wake that finds the run leased is dropped (a container that found it busy).
 */
function setUp(make: () => Lab, workflows: AnyWorkflow[]) {
  const lab = (open = make());
  const registry = createRegistry(workflows);
  const dropped: Wake[] = [];
  const sent: Wake[] = [];
  const busyDropping: WakeQueue = {
    schedule: async (w) => {
      if ((await lab.store.getRun(w.runId))?.lease) dropped.push(w);
      else await lab.wakes.schedule(w);
    },
    cancel: (runId, key) => lab.wakes.cancel(runId, key),
  };
  const tracked: WakeQueue = { schedule: async (w) => (sent.push(w), lab.wakes.schedule(w)), cancel: (runId, key) => lab.wakes.cancel(runId, key) };
  const pausing = new PausingStore(lab.store);
  const answers: ReleaseResult[] = [];
  const afterRelease: StoreOp[] = [];
  const holderStore = interceptStore(pausing.store, async (op, _args, call) => {
    if (answers.length > 0) afterRelease.push(op);
    const answer = await call();
    if (op === "releaseLease") answers.push(answer as ReleaseResult);
    return answer;
  });
  const ports = { clock: lab.clock, workflows: registry };
  const client = new Client({ ...ports, store: lab.store, wakes: busyDropping });
  const holder = new Engine({ ...ports, store: holderStore, wakes: tracked, owner: "holder", leaseTtlMs: 30_000 });
  const next = new Engine({ ...ports, store: lab.store, wakes: tracked, owner: "next", leaseTtlMs: 30_000 });
  return { lab, client, holder, next, pausing, dropped, sent, answers, afterRelease };
}

describe.each(labs)("a release that answers the run's wake time (%s)", (_name, make) => {
  it("a signal delivered (its record, then the mark) while the invocation holds the lease: the release answers it due, the run wakes and takes the signal", async () => {
    const t = setUp(make, [waiting]);
    await t.client.start(waiting, { runId: "w", input: {} });
    const held = t.pausing.hold("releaseLease", "before", (args) => args[0] === "w");
    const invocation = t.holder.invoke("w");
    await held.reached;
    // The wait is written and the invocation looked for signals: the signal comes now.
    expect(await t.client.signal("w", "approval", { approver: "ana" }, { signalId: "mail-1" })).toMatchObject({ status: "delivered" });
    expect(t.dropped.map((w) => w.reason)).toEqual(["signal"]);
    t.lab.clock.advance(5);
    held.release();
    expect(await invocation).toMatchObject({ status: "suspended", waitingFor: "signal:approval" });

    const [answer] = t.answers;
    expect(answer?.released).toBe(true);
    expect(answer?.released && answer.wakeAt).toBeLessThanOrEqual(t.lab.clock.now());
    // Nothing read (or written) after the release: the answer said it all.
    expect(t.afterRelease).toEqual([]);
    const wake = t.sent.find((w) => w.runId === "w" && w.reason === "signal");
    expect(wake?.at).toBe(answer?.released ? answer.wakeAt : undefined);
    if (!wake) throw new Error("no wake after the release");
    expect(await t.next.invoke("w", { wakeAt: wake.at })).toEqual({ status: "completed", result: "ana" });
  });

  it("a cancellation requested while the invocation goes to sleep: the release answers it due, not the sleep's time, and the run is cancelled at once", async () => {
    const t = setUp(make, [sleeping]);
    await t.client.start(sleeping, { runId: "s", input: {} });
    const held = t.pausing.hold("releaseLease", "before", (args) => args[0] === "s");
    const invocation = t.holder.invoke("s");
    await held.reached;
    expect(await t.client.cancel("s", { reason: "withdrawn" })).toMatchObject({ outcome: "requested" });
    expect(t.dropped.map((w) => w.reason)).toEqual(["cancel"]);
    held.release();
    expect(await invocation).toMatchObject({ status: "suspended", waitingFor: "sleep:nap" });

    const [answer] = t.answers;
    expect(answer?.released).toBe(true);
    expect(answer?.released && answer.wakeAt).toBeLessThanOrEqual(t.lab.clock.now());
    expect(t.afterRelease).toEqual([]);
    // Woken at the answered time, not in 20 s.
    const wake = t.sent.find((w) => w.runId === "s" && w.at <= t.lab.clock.now());
    if (!wake) throw new Error("no wake at the answered time");
    expect(await t.next.invoke("s", { wakeAt: wake.at })).toMatchObject({ status: "cancelled", reason: "withdrawn" });
  });

  it("a sleep nobody disturbed: the release answers the sleep's own time, and its wake is the sleep's", async () => {
    const t = setUp(make, [sleeping]);
    await t.client.start(sleeping, { runId: "q", input: {} });
    const now = t.lab.clock.now();
    expect(await t.holder.invoke("q")).toMatchObject({ status: "suspended", wakeAt: now + 20_000 });
    expect(t.answers).toEqual([{ released: true, wakeAt: now + 20_000 }]);
    expect(t.afterRelease).toEqual([]);
    expect(t.sent.filter((w) => w.runId === "q").map((w) => [w.reason, w.at])).toEqual([["sleep", now + 20_000]]);
  });
});
