/**
 * Queued runs that must not wait longer than they should.
 *
 * A leaked slot: the holder of a slot died after its run ended and before it freed the slot. Nobody frees that slot: it comes free only when it
 * expires (a lease's length after its last renewal). The run at the head of the queue must then
 * be woken by that expiry, not left to its 30-second recheck (on AWS, to the 5-minute watchdog).
 * Real SQLite journal; the holder's death is a store whose `freeSlot` never arrives.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { durable } from "waymark";
import type { JournalStore } from "../../lib/ports.ts";
import { Gates } from "../support/gates.ts";
import { sqliteLab } from "../support/sqlite-lab.ts";

const LEASE_MS = 2_000;

/** The store as a process sees it that dies just before freeing a slot: the call never arrives. */
function diesBeforeFreeingSlots(store: JournalStore): JournalStore {
  return new Proxy(store, {
    get: (target, prop, receiver) => (prop === "freeSlot" ? async () => undefined : (Reflect.get(target, prop, receiver) as unknown)),
  });
}

describe("a slot leaked by a holder that died after its run ended", () => {
  const lane = durable({ name: "lane", input: z.object({ id: z.string() }), concurrency: { key: () => "k", limit: 1 } }, async ({ id }, step) => step.run("work", () => id));

  it("the run at the head of the queue is woken when the slot expires, and runs then", async () => {
    const lab = sqliteLab([lane]);
    try {
      for (const id of ["a", "b", "c"]) await lab.client().start(lane, { runId: id, input: { id } });
      expect(await lab.engine("A", diesBeforeFreeingSlots(lab.store), { leaseTtlMs: LEASE_MS }).invoke("a")).toEqual({ status: "completed", result: "a" });
      const queuedAt = lab.clock.now();
      expect(await lab.engine("B", lab.store, { leaseTtlMs: LEASE_MS }).invoke("b")).toEqual({ status: "queued", scope: "lane:k" });
      expect(await lab.engine("B", lab.store, { leaseTtlMs: LEASE_MS }).invoke("c")).toEqual({ status: "queued", scope: "lane:k" });

      // b, first in line, is woken once every slot held when it queued has had time to expire.
      const woken = lab.scheduled.filter((w) => w.runId === "b" && w.at > queuedAt);
      expect(woken.map((w) => w.at - queuedAt)).toEqual([expect.any(Number)]);
      const after = (woken[0]?.at ?? 0) - queuedAt;
      expect(after).toBeGreaterThanOrEqual(LEASE_MS);
      expect(after).toBeLessThan(LEASE_MS + 1_000);
      // c waits behind it: handed the slot when b frees it, not polling.
      expect(lab.scheduled.filter((w) => w.runId === "c" && w.at > queuedAt)).toEqual([]);

      lab.clock.advance(after);
      expect(await lab.engine("C", lab.store, { leaseTtlMs: LEASE_MS }).invoke("b")).toEqual({ status: "completed", result: "b" });
      expect(lab.scheduled.filter((w) => w.runId === "c").at(-1)).toMatchObject({ key: "slot" });
      expect(await lab.engine("C", lab.store, { leaseTtlMs: LEASE_MS }).invoke("c")).toEqual({ status: "completed", result: "c" });
    } finally {
      lab.close();
    }
  });
});

describe("a queued run that reaches its durable({ timeout })", () => {
  it("ends cancelled at its deadline, having run nothing, and leaves the queue (before: it stayed queued until admitted)", async () => {
    const gates = new Gates();
    const timed = durable({ name: "timed-lane", input: z.object({ id: z.string() }), concurrency: { key: () => "k", limit: 1 }, timeout: "1m" }, async ({ id }, step) =>
      step.run("work", () => (id === "holder" ? gates.wait("holder") : id)),
    );
    const lab = sqliteLab([timed]);
    try {
      await lab.client().start(timed, { runId: "holder", input: { id: "holder" } });
      await lab.client().start(timed, { runId: "late", input: { id: "late" } });
      const holder = lab.engine("A", lab.store, { leaseTtlMs: 600_000 }).invoke("holder"); // holds its slot past late's deadline
      await gates.started("holder");
      expect(await lab.engine("B").invoke("late")).toEqual({ status: "queued", scope: "timed-lane:k" });
      lab.clock.advance(61_000);
      expect(await lab.engine("B").invoke("late")).toMatchObject({ status: "cancelled" });
      expect(await lab.store.getRun("late")).toMatchObject({ status: "cancelled", error: { name: "CancelledError", fields: { reason: "the run passed its timeout of 60000 ms" } } });
      expect(await lab.store.peek("timed-lane:k")).toBeUndefined();
      gates.open("holder", 0, "held");
      await holder;
    } finally {
      lab.close();
    }
  });
});
