/**
 * The contract of a {@link PollableWakeQueue} (the SQLite wake table, the in-memory queue):
 * one wake per run and key, claims that hide a wake for a while (so a crashed host loses
 * nothing), and acks that keep a wake rescheduled since its claim.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ClaimedWake, PollableWakeQueue, Wake } from "../../lib/ports.ts";
import { T, freshId } from "./helpers.ts";

export interface WakeQueueHarness {
  queue: PollableWakeQueue;
  close?: () => Promise<void>;
}

const VISIBILITY = 30_000;

/**
 * Declares `PollableWakeQueue contract: <name>`. `make` is called before each test and must
 * return an empty queue: `claimDue` and `nextDueAt` look at the whole queue.
 *
 * @example
 * ```ts
 * journalWakeQueueContract("memory", async () => ({ queue: new MemoryWakeQueue() }));
 * ```
 */
export function journalWakeQueueContract(name: string, make: () => Promise<WakeQueueHarness>): void {
  describe(`PollableWakeQueue contract: ${name}`, () => {
    let harness: WakeQueueHarness | undefined;
    beforeEach(async () => {
      harness = await make();
    });
    afterEach(async () => {
      await harness?.close?.();
    });
    const queue = (): PollableWakeQueue => {
      if (!harness) throw new Error("the queue factory has not run");
      return harness.queue;
    };
    const wake = (at: number, key = "sleep:nap", runId = freshId("wake")): Wake => ({ runId, at, reason: "sleep", key });
    const plain = (claimed: ClaimedWake[]): Wake[] => claimed.map(({ runId, at, reason, key }) => ({ runId, at, reason, key }));

    it("an empty queue has nothing due", async () => {
      expect(await queue().claimDue(T, 10, VISIBILITY)).toEqual([]);
      expect(await queue().nextDueAt()).toBeUndefined();
    });

    it("claimDue returns a wake once its time has come, with a generation", async () => {
      const w = wake(T + 100);
      await queue().schedule(w);
      expect(await queue().nextDueAt()).toBe(T + 100);
      expect(await queue().claimDue(T + 99, 10, VISIBILITY)).toEqual([]);
      const claimed = await queue().claimDue(T + 100, 10, VISIBILITY);
      expect(plain(claimed)).toEqual([w]);
      expect(typeof claimed[0]?.generation).toBe("number");
    });

    it("a claimed wake stays hidden for visibilityMs, then reappears with the same generation", async () => {
      await queue().schedule(wake(T));
      const [first] = await queue().claimDue(T + 10, 10, VISIBILITY);
      expect(first).toBeDefined();
      expect(await queue().nextDueAt()).toBe(T + 10 + VISIBILITY);
      expect(await queue().claimDue(T + 10 + VISIBILITY - 1, 10, VISIBILITY)).toEqual([]);
      const again = await queue().claimDue(T + 10 + VISIBILITY, 10, VISIBILITY);
      expect(again).toEqual([first]);
    });

    it("ack deletes a claimed wake for good", async () => {
      await queue().schedule(wake(T));
      const [claimed] = await queue().claimDue(T, 10, VISIBILITY);
      if (!claimed) throw new Error("nothing claimed");
      await queue().ack(claimed);
      expect(await queue().nextDueAt()).toBeUndefined();
      expect(await queue().claimDue(T + 10 * VISIBILITY, 10, VISIBILITY)).toEqual([]);
    });

    it("scheduling the same run and key twice keeps one wake, at the later schedule's time", async () => {
      const runId = freshId("twice");
      await queue().schedule(wake(T + 500, "timeout:approval", runId));
      await queue().schedule({ runId, at: T + 200, reason: "timeout", key: "timeout:approval" });
      expect(await queue().nextDueAt()).toBe(T + 200);
      const claimed = await queue().claimDue(T + 1_000, 10, VISIBILITY);
      expect(plain(claimed)).toEqual([{ runId, at: T + 200, reason: "timeout", key: "timeout:approval" }]);
    });

    it("a reschedule of a claimed wake makes it visible at its new time, and acking the old claim keeps it", async () => {
      const w = wake(T);
      await queue().schedule(w);
      const [claimed] = await queue().claimDue(T, 10, VISIBILITY);
      if (!claimed) throw new Error("nothing claimed");
      await queue().schedule({ ...w, at: T + 50 });
      expect(await queue().nextDueAt()).toBe(T + 50);
      await queue().ack(claimed);
      const [next] = await queue().claimDue(T + 50, 10, VISIBILITY);
      expect(next && plain([next])).toEqual([{ ...w, at: T + 50 }]);
      expect(next?.generation).not.toBe(claimed.generation);
      if (next) await queue().ack(next);
      expect(await queue().nextDueAt()).toBeUndefined();
    });

    it("acking an old claim keeps a wake cancelled and scheduled again since", async () => {
      const w = wake(T);
      await queue().schedule(w);
      const [claimed] = await queue().claimDue(T, 10, VISIBILITY);
      if (!claimed) throw new Error("nothing claimed");
      await queue().cancel(w.runId, w.key);
      await queue().schedule(w);
      await queue().ack(claimed);
      expect(plain(await queue().claimDue(T, 10, VISIBILITY))).toEqual([w]);
    });

    it("cancel deletes only that run's wake of that key; cancelling a missing wake is a no-op", async () => {
      const runId = freshId("cancel");
      const keep = [wake(T + 1, "timeout:approval", runId), wake(T + 2, "sleep:nap")];
      await queue().schedule(wake(T, "sleep:nap", runId));
      for (const w of keep) await queue().schedule(w);
      await queue().cancel(runId, "sleep:nap");
      await queue().cancel(runId, "sleep:nap");
      await queue().cancel(freshId("cancel-missing"), "sleep:nap");
      expect(await queue().nextDueAt()).toBe(T + 1);
      expect(plain(await queue().claimDue(T + 10, 10, VISIBILITY))).toEqual(keep);
    });

    it("claimDue takes the earliest visible wakes first, at most limit of them", async () => {
      const wakes = [wake(T + 30), wake(T + 10), wake(T + 20), wake(T + 40), wake(T + 1_000)];
      for (const w of wakes) await queue().schedule(w);
      const first = await queue().claimDue(T + 100, 2, VISIBILITY);
      expect(plain(first)).toEqual([wakes[1], wakes[2]]);
      const rest = await queue().claimDue(T + 100, 10, VISIBILITY);
      expect(plain(rest)).toEqual([wakes[0], wakes[3]]);
      expect(await queue().nextDueAt()).toBe(T + 1_000);
      expect(await queue().claimDue(T + 100, 0, VISIBILITY)).toEqual([]);
    });

    it("concurrent claimDue calls never hand out the same wake twice", async () => {
      const wakes = Array.from({ length: 30 }, (_, i) => wake(T + i));
      for (const w of wakes) await queue().schedule(w);
      const batches = await Promise.all(Array.from({ length: 10 }, () => queue().claimDue(T + 100, 5, VISIBILITY)));
      const claimed = batches.flat().map((w) => w.runId);
      expect(claimed).toHaveLength(30);
      expect(new Set(claimed)).toEqual(new Set(wakes.map((w) => w.runId)));
    });
  });
}
