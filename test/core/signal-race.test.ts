import { describe, expect, it } from "vitest";
import { type AppendResult, Client, createRegistry, durable, Engine, type ReleaseResult, type StoredRecord, type SuspendUpdate, type Wake } from "waymark";
import { MemoryJournalStore, MemoryWakeQueue, VirtualClock } from "waymark/testing";
import { Approval, Empty } from "./helpers.ts";

const flow = durable({ name: "race-flow", input: Empty, signals: { approval: Approval } }, async (_in, step) => {
  const decision = await step.waitForSignal("approval", { timeout: "24h" });
  return decision.received ? decision.payload.approver : "timed out";
});

/**
 * The worst interleaving for a signal: it is delivered after the suspending invocation's last
 * look at the journal and before it releases the lease, and the deliverer's wake is consumed
 * while the lease is still held (a "busy" wake, acknowledged and gone). The run must still
 * resume: the deliverer marked the run (`dueOnRelease`), and the release answers that wake time,
 * so the invocation wakes the run itself without reading anything after it.
 */
describe("a signal delivered while the run is suspending", () => {
  it("is picked up even though its own wake found the run busy and was dropped", async () => {
    const clock = new VirtualClock();
    const wakes = new MemoryWakeQueue();
    const dropped: Wake[] = [];
    let deliverDuringRelease = true;
    let client: Client | undefined;
    class RacyStore extends MemoryJournalStore {
      override async releaseLease(runId: string, token: number, update: SuspendUpdate): Promise<ReleaseResult> {
        if (deliverDuringRelease) {
          deliverDuringRelease = false;
          await client?.signal(runId, "approval", { approved: true, approver: "ana" });
        }
        return super.releaseLease(runId, token, update);
      }
    }
    const store = new RacyStore();
    // While the lease is held, a "signal" wake is consumed by a container that finds the run busy.
    const racyWakes = {
      schedule: async (wake: Wake) => {
        if (wake.reason === "signal" && (await store.getRun(wake.runId))?.lease) dropped.push(wake);
        else await wakes.schedule(wake);
      },
      cancel: (runId: string, key: string) => wakes.cancel(runId, key),
    };
    const ports = { store, wakes: racyWakes, clock, workflows: createRegistry([flow]) };
    client = new Client(ports);
    const engine = new Engine({ ...ports, owner: "a" });

    await client.start(flow, { runId: "r1", input: {} });
    expect(await engine.invoke("r1")).toMatchObject({ status: "suspended" });
    expect(dropped.map((w) => w.reason)).toEqual(["signal"]);
    const due = await wakes.claimDue(clock.now(), 10, 60_000);
    expect(due.map((w) => [w.reason, w.key])).toContainEqual(["signal", "signal"]);
    expect(await engine.invoke("r1")).toEqual({ status: "completed", result: "ana" });
  });
});

describe("a timeout that loses its race to a signal delivered after the journal was loaded", () => {
  it("adopts the signal on the next invocation instead of failing the run", async () => {
    const clock = new VirtualClock();
    let client: Client | undefined;
    let raced = false;
    class RacyStore extends MemoryJournalStore {
      override async appendRecord(runId: string, record: StoredRecord): Promise<AppendResult> {
        if (record.key === "resolution#approval" && !raced) {
          raced = true; // the signal lands between our load and our timeout write
          await client?.signal(runId, "approval", { approved: true, approver: "just-in-time" });
        }
        return super.appendRecord(runId, record);
      }
    }
    const store = new RacyStore();
    const wakes = new MemoryWakeQueue();
    const p = { store, wakes, clock, workflows: createRegistry([flow]) };
    client = new Client(p);
    const engine = new Engine({ ...p, owner: "a" });
    await client.start(flow, { runId: "t1", input: {} });
    expect(await engine.invoke("t1")).toMatchObject({ status: "suspended" });
    clock.advance(24 * 3600_000);
    expect(await engine.invoke("t1")).toMatchObject({ status: "suspended", waitingFor: "signal:approval" });
    expect(await engine.invoke("t1")).toEqual({ status: "completed", result: "just-in-time" });
  });
});
