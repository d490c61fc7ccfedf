/**
 * A wake answered for its time (`InvokeOptions.wakeAt`, what the SQS transport passes): a
 * suspended run not due by then is not invoked (`not-due`), and every wake meant for the run
 * finds it due — including the one a deliverer's retry sends when its first attempt died, while
 * an invocation held the lease, between writing the signal and marking the run due (the holder
 * reads nothing after its release: a delivery is complete when its mark lands).
 */
import { describe, expect, it } from "vitest";
import { Client, createRegistry, durable, Engine, type MarkDueResult, type ReleaseResult, type SuspendUpdate, type Wake } from "waymark";
import { MemoryJournalStore, MemoryWakeQueue, VirtualClock } from "waymark/testing";
import { Approval, Empty } from "./helpers.ts";

const flow = durable({ name: "due-flow", input: Empty, signals: { approval: Approval } }, async (_in, step) => {
  const decision = await step.waitForSignal("approval", { timeout: "24h" });
  return decision.received ? decision.payload.approver : "timed out";
});

describe("a wake answered for its time", () => {
  it("finds a run that waits for something later not due: nothing is invoked or written", async () => {
    const clock = new VirtualClock();
    const store = new MemoryJournalStore();
    const wakes = new MemoryWakeQueue();
    const ports = { store, wakes, clock, workflows: createRegistry([flow]) };
    const engine = new Engine({ ...ports, owner: "a" });
    await new Client(ports).start(flow, { runId: "d1", input: {} });
    const [start] = await wakes.claimDue(clock.now(), 10, 60_000);
    if (!start) throw new Error("no start wake");
    expect(await engine.invoke("d1", { wakeAt: start.at })).toMatchObject({ status: "suspended", waitingFor: "signal:approval" });
    const asleep = await store.getRun("d1");
    // The start wake again: the run waits for a signal or its timeout a day away.
    expect(await engine.invoke("d1", { wakeAt: start.at })).toEqual({ status: "not-due", wakeAt: asleep?.wakeAt });
    expect(await store.getRun("d1")).toEqual(asleep);
    // Without a wake's time (the local runtime, tests) the run is invoked as before.
    expect(await engine.invoke("d1")).toMatchObject({ status: "suspended" });
  });

  it("finds the run due when a signal's deliverer, which died before its mark while the run was leased, retries with the same signal id", async () => {
    const clock = new VirtualClock();
    const wakes = new MemoryWakeQueue();
    let client: Client | undefined;
    let deliverDuringRelease = true;
    let deliverer = false;
    class RacyStore extends MemoryJournalStore {
      override async releaseLease(runId: string, token: number, update: SuspendUpdate): Promise<ReleaseResult> {
        if (deliverDuringRelease) {
          deliverDuringRelease = false;
          deliverer = true;
          // The signal and its wait's resolution are written; the deliverer dies before it marks the run due.
          await client?.signal(runId, "approval", { approved: true, approver: "ana" }, { signalId: "mail-1" }).catch(() => {});
          deliverer = false;
        }
        return super.releaseLease(runId, token, update);
      }
      override async markDue(runId: string, at: number): Promise<MarkDueResult> {
        if (deliverer) throw new Error("the deliverer died");
        return super.markDue(runId, at);
      }
    }
    const store = new RacyStore();
    const sent: Wake[] = [];
    const tracked = { schedule: async (w: Wake) => (sent.push(w), wakes.schedule(w)), cancel: (runId: string, key: string) => wakes.cancel(runId, key) };
    const ports = { store, wakes: tracked, clock, workflows: createRegistry([flow]) };
    client = new Client(ports);
    const engine = new Engine({ ...ports, owner: "a" });

    await client.start(flow, { runId: "d2", input: {} });
    expect(await engine.invoke("d2", { wakeAt: clock.now() })).toMatchObject({ status: "suspended", waitingFor: "signal:approval" });
    // Not delivered yet: no mark landed, so the run sleeps until its timeout and nothing woke it.
    expect(sent.filter((w) => w.reason === "signal")).toEqual([]);
    expect((await store.getRun("d2"))?.wakeAt).toBe(clock.now() + 24 * 3600_000);
    // The deliverer retries with the same id: the same delivery, now marked and woken.
    expect(await client.signal("d2", "approval", { approved: true, approver: "ana" }, { signalId: "mail-1" })).toMatchObject({ status: "delivered" });
    const wake = sent.find((w) => w.reason === "signal");
    if (!wake) throw new Error("no signal wake");
    expect(await engine.invoke("d2", { wakeAt: wake.at })).toEqual({ status: "completed", result: "ana" });
  });

  it("finds the run due again after a fault that came once it was released: the wake that faulted, redelivered, is granted", async () => {
    const sleepy = durable({ name: "due-sleepy", input: Empty }, async (_in, step) => {
      await step.sleep("nap", "1h");
      return "rested";
    });
    const clock = new VirtualClock();
    const queue = new MemoryWakeQueue();
    let failSleepWake = true;
    // The sleep's wake is refused once (the Scheduler throttled), after the run was released.
    const wakes = {
      schedule: async (w: Wake) => {
        if (w.reason === "sleep" && failSleepWake) {
          failSleepWake = false;
          throw new Error("throttled");
        }
        return queue.schedule(w);
      },
      cancel: (runId: string, key: string) => queue.cancel(runId, key),
    };
    const store = new MemoryJournalStore();
    const ports = { store, wakes, clock, workflows: createRegistry([sleepy]) };
    const engine = new Engine({ ...ports, owner: "a" });
    await new Client(ports).start(sleepy, { runId: "d3", input: {} });
    const [start] = await queue.claimDue(clock.now(), 10, 60_000);
    if (!start) throw new Error("no start wake");
    await expect(engine.invoke("d3", { wakeAt: start.at })).rejects.toThrow("throttled");
    // SQS delivers the wake that faulted again, a little later: the run must be invoked, not
    // refused as not due (its release had set it due in an hour, and no sleep wake was sent).
    clock.advance(30_000);
    expect(await engine.invoke("d3", { wakeAt: start.at })).toMatchObject({ status: "suspended", waitingFor: "sleep:nap" });
    // And the sleep's wake, which the fault kept from being sent, is sent now.
    const due = await queue.claimDue(clock.now() + 3_600_000, 10, 60_000);
    expect(due.filter((w) => w.reason === "sleep")).toMatchObject([{ runId: "d3", key: "sleep:nap" }]);
  });
});
