/**
 * Issue 17, what the simulator found at continueAsNew's switch, as exact interleavings on a real
 * SQLite journal:
 *
 * - a signal id is one delivery over the whole run: a retried signal whose first attempt reached
 *   incarnation 1 (its answer lost), was consumed there, and the run moved on, is not written to
 *   incarnation 2 and consumed again;
 * - nothing written to an old incarnation is left behind: a signal whose sender read the run
 *   before the switch and wrote after the switch's last look is carried on — by the sender, or by
 *   its retry when the sender's own follow-up failed;
 * - (soak seed 1125807773) the same for a cancellation whose writer gave up, when the switch's
 *   own second look failed too: the first invocation of the new incarnation looks once more.
 */
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { durable, type JournalStore } from "waymark";
import { PausingStore } from "../support/pausing-store.ts";
import { LostResponseStore } from "../support/lost-response-store.ts";
import { type SqliteLab, sqliteLab } from "../support/sqlite-lab.ts";

let lab: SqliteLab;
afterEach(() => lab?.close());

/** Takes one message per incarnation, handles it, and continues as new until it has handled `total`. */
const inbox = durable({ name: "inbox", input: z.object({ seen: z.number(), total: z.number() }), signals: { msg: z.object({ n: z.number() }) } }, async (input, step) => {
  const got = await step.waitForSignal("msg", { timeout: "1h" });
  if (!got.received) return { seen: input.seen, timedOut: true };
  await step.run("handle", () => got.payload.n);
  if (input.seen + 1 < input.total) return step.continueAsNew({ seen: input.seen + 1, total: input.total });
  return { seen: input.seen + 1, timedOut: false };
});

async function consumedCount(store: JournalStore, runId: string, signalId: string): Promise<number> {
  const run = await store.getRun(runId);
  let n = 0;
  for (let k = 1; k <= (run?.incarnation ?? 1); k++) {
    for (const r of (await store.loadJournal(runId, { incarnation: k }))?.records ?? []) {
      const b = r.body as { type?: string; signalId?: string };
      if (b.type === "resolution" && b.signalId === signalId) n++;
    }
  }
  return n;
}

describe("signals across continueAsNew", () => {
  it("a retried signal whose first attempt reached the previous incarnation is consumed once, not again in the next", async () => {
    lab = sqliteLab([inbox]);
    await lab.client().start(inbox, { runId: "in1", input: { seen: 0, total: 3 } });
    const engine = lab.engine("W");
    expect(await engine.invoke("in1")).toMatchObject({ status: "suspended" });
    // The first attempt of sig-a is written to incarnation 1, and its answer is lost.
    const lossy = new LostResponseStore(lab.store).lose("appendRecord", (args) => (args[1] as { key: string }).key === "signal#sig-a", "throw");
    await expect(lab.client(lossy.store).signal("in1", "msg", { n: 1 }, { signalId: "sig-a" })).rejects.toThrow();
    // The run takes it (incarnation 1 handles it) and moves on to incarnation 2.
    expect(await engine.invoke("in1")).toMatchObject({ status: "continued", incarnation: 2 });
    expect(await engine.invoke("in1")).toMatchObject({ status: "suspended" });
    // The sender retries the same delivery: it is recognised, not written where a second wait would take it.
    expect(await lab.client().signal("in1", "msg", { n: 1 }, { signalId: "sig-a" })).toMatchObject({ signalId: "sig-a" });
    expect(await engine.invoke("in1")).toMatchObject({ status: "suspended" });
    expect(await consumedCount(lab.store, "in1", "sig-a")).toBe(1);
    expect(await lab.store.getRecord("in1~2", "signal#sig-a")).toBeUndefined();
  });

  it("a signal written to the old incarnation after the switch's last look is carried on, even when its sender's follow-up failed", async () => {
    lab = sqliteLab([inbox]);
    await lab.client().start(inbox, { runId: "in2", input: { seen: 0, total: 3 } });
    const engine = lab.engine("W");
    await engine.invoke("in2");
    await lab.client().signal("in2", "msg", { n: 1 }, { signalId: "first" });
    // The sender of sig-b reads the run (incarnation 1) and is held before its write.
    const pausing = new PausingStore(lab.store);
    const write = pausing.hold("appendRecord", "before", (args) => (args[1] as { key: string }).key === "signal#sig-b");
    const sending = lab.client(pausing.store).signal("in2", "msg", { n: 2 }, { signalId: "sig-b" });
    await write.reached;
    // Meanwhile the run handles "first" and switches to incarnation 2 (it looked twice: nothing there yet).
    expect(await engine.invoke("in2")).toMatchObject({ status: "continued", incarnation: 2 });
    // Then the write lands in incarnation 1, and the sender's follow-up read of the run fails.
    const follow = pausing.hold("getRun", "before");
    write.release();
    await follow.reached;
    follow.fail(new Error("unreachable"));
    await expect(sending).rejects.toThrow();
    // Its retry finds the signal left behind and carries it on; the next incarnation takes it.
    expect(await lab.client().signal("in2", "msg", { n: 2 }, { signalId: "sig-b" })).toMatchObject({ signalId: "sig-b", status: "buffered" });
    expect(await engine.invoke("in2")).toMatchObject({ status: "continued", incarnation: 3 });
    expect(await consumedCount(lab.store, "in2", "sig-b")).toBe(1);
  });

  it("a cancel written after the switch's first look is carried on when both the switch's second look and the canceller's follow-up fail", async () => {
    lab = sqliteLab([inbox]);
    await lab.client().start(inbox, { runId: "in3", input: { seen: 0, total: 3 } });
    expect(await lab.engine("W").invoke("in3")).toMatchObject({ status: "suspended" });
    await lab.client().signal("in3", "msg", { n: 1 }, { signalId: "first" });
    const pausing = new PausingStore(lab.store);
    // The canceller reads the run (incarnation 1) and is held before its write.
    const write = pausing.hold("appendRecord", "before", (args) => (args[1] as { key: string }).key === "cancel");
    const cancelling = lab.client(pausing.store).cancel("in3", { reason: "stop" });
    await write.reached;
    // The run handles "first" and switches (its first look found no cancel); held just after.
    const switched = pausing.hold("continueRun", "after");
    const switching = lab.engine("W1", pausing.store).invoke("in3");
    await switched.reached;
    // The cancel lands in incarnation 1; the canceller's follow-up read fails.
    const follow = pausing.hold("getRun", "before");
    write.release();
    await follow.reached;
    follow.fail(new Error("unreachable"));
    await expect(cancelling).rejects.toThrow(/unreachable/);
    // The switch's second look at incarnation 1 fails too: that invocation ends with a fault.
    const secondLook = pausing.hold("loadJournal", "before");
    switched.release();
    await secondLook.reached;
    secondLook.fail(new Error("unreachable"));
    await expect(switching).rejects.toThrow(/unreachable/);
    // The next invocation is incarnation 2's first: it finds the cancel, and the run ends cancelled.
    lab.clock.advance(31_000);
    expect(await lab.engine("W2").invoke("in3")).toMatchObject({ status: "cancelled", reason: "stop" });
    expect(await lab.store.getRecord("in3~2", "cancel")).toBeDefined();
  });
});
