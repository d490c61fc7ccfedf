/**
 * Simulator seed 1281796203. An invocation decides to end a sleep with the run's cancellation
 * (before the sleep's time), writes the sleep's record, and freezes before writing the
 * resolution. The invocation that takes the lease after the sleep's time passes the sleep and
 * delivers the cancellation at the next wait. The frozen one then comes back and writes its
 * resolution: unless the holder journaled the sleep's end, replay stops at the sleep, where the
 * holder went on.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { type AppendResult, CancelledError, Client, createRegistry, durable, Engine, type StoredRecord } from "waymark";
import { MemoryJournalStore, MemoryWakeQueue, replayHistories, VirtualClock } from "waymark/testing";

describe("a sleep cancelled late by an invocation that lost its lease", () => {
  const bookBodies: Array<() => void> = [];
  const saga = durable({ name: "late-sleep-cancel", input: z.object({}), signals: { approve: z.object({}) } }, async (_in, step) => {
    try {
      await step.run("book", () => new Promise<string>((resolve) => bookBodies.push(() => resolve("booked"))));
      await step.sleep("pause", 10_000);
      await step.waitForSignal("approve", { timeout: "10m" });
      return "done";
    } catch (err) {
      if (err instanceof CancelledError) await step.run("unbook", () => "unbooked");
      throw err;
    }
  });
  const until = async (check: () => boolean | Promise<boolean>) => {
    while (!(await check())) await new Promise((r) => setTimeout(r, 2));
  };

  it("replays the way the lease holder went", { timeout: 15_000 }, async () => {
    let release: (() => void) | undefined;
    let aWroteResolution = false;
    class FreezeAfterSleep extends MemoryJournalStore {
      override async appendRecord(runId: string, record: StoredRecord, probe?: string): Promise<AppendResult> {
        const result = await super.appendRecord(runId, record, probe);
        if (record.key === "resolution#pause" && (record.body as { inv?: number }).inv === 1) aWroteResolution = true;
        // A's write of the sleep lands; its answer comes back only after B has ended the run.
        if (record.key === "step#pause" && (record.body as { inv?: number }).inv === 1) await new Promise<void>((r) => (release = r));
        return result;
      }
    }
    const store = new FreezeAfterSleep();
    const clock = new VirtualClock();
    const p = { store, wakes: new MemoryWakeQueue(), clock, workflows: createRegistry([saga]) };
    const client = new Client(p);
    await client.start(saga, { runId: "s1", input: {} });
    const a = new Engine({ ...p, owner: "A" }).invoke("s1").catch(() => {});
    await until(() => bookBodies.length === 1);
    expect((await client.cancel("s1")).outcome).toBe("requested");
    // A's step write brings the cancellation back; A ends the sleep with it, and freezes.
    bookBodies[0]?.();
    await until(() => release !== undefined);
    // Past the sleep's time (and A's lease), B takes the run: the sleep is over; the wait gets the cancellation.
    clock.advance(60_000);
    expect(await new Engine({ ...p, owner: "B" }).invoke("s1", { mayBreak: () => true })).toMatchObject({ status: "cancelled" });
    release?.();
    await a;
    // A's sleep goes on past its (ended) invocation: it writes the resolution it decided on.
    await until(() => aWroteResolution);

    const run = await store.getRun("s1");
    const records = (await store.loadJournal("s1"))?.records ?? [];
    if (!run) throw new Error("no run");
    const [report] = await replayHistories({ workflows: [saga], histories: [{ run, records }] });
    expect(report?.error?.message).toBeUndefined();
    expect(report).toMatchObject({ ok: true, reached: "cancelled" });
  });
});
