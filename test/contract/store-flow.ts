/** Contract: flow control's slots and queue (`durable({ concurrency })`). */
import { expect, it } from "vitest";
import type { JournalStore } from "../../lib/ports.ts";
import { LostResponseStore } from "../support/lost-response-store.ts";
import { T, freshId } from "./helpers.ts";

export function flowTests(store: () => JournalStore): void {
  it("takeSlot grants at most `limit` holders; a holder keeps its slot; a freed or expired slot is taken again", async () => {
    const scope = freshId("scope");
    expect(await store().takeSlot(scope, 2, { runId: "a", expiresAt: T + 100 }, T)).toBe(true);
    expect(await store().takeSlot(scope, 2, { runId: "b", expiresAt: T + 100 }, T)).toBe(true);
    expect(await store().takeSlot(scope, 2, { runId: "c", expiresAt: T + 100 }, T)).toBe(false);
    // A holder asking again (a retry, or a renewal) keeps its slot and moves its expiry.
    expect(await new LostResponseStore(store()).lose("takeSlot").store.takeSlot(scope, 2, { runId: "a", expiresAt: T + 500 }, T + 50)).toBe(true);
    expect(await store().takeSlot(scope, 2, { runId: "c", expiresAt: T + 300 }, T + 60)).toBe(false);
    await store().freeSlot(scope, "b");
    await store().freeSlot(scope, "b"); // idempotent
    expect(await store().takeSlot(scope, 2, { runId: "c", expiresAt: T + 300 }, T + 70)).toBe(true);
    // b's turn is gone; a crashed holder's slot (c's, expired at T + 300) is recovered.
    expect(await store().takeSlot(scope, 2, { runId: "d", expiresAt: T + 900 }, T + 200)).toBe(false);
    expect(await store().takeSlot(scope, 2, { runId: "d", expiresAt: T + 900 }, T + 300)).toBe(true);
    // Another scope is independent.
    expect(await store().takeSlot(freshId("other"), 1, { runId: "c", expiresAt: T + 100 }, T)).toBe(true);
  });

  it("the queue gives runs back in order, each once, and enqueueing again changes nothing", async () => {
    const scope = freshId("queue");
    await store().enqueue(scope, "r2", T + 2);
    await store().enqueue(scope, "r1", T + 1);
    await new LostResponseStore(store()).lose("enqueue").store.enqueue(scope, "r3", T + 3);
    await store().enqueue(scope, "r1", T + 1);
    const out = await Promise.all([store().dequeue(scope), store().dequeue(scope)]);
    expect(out.sort()).toEqual(["r1", "r2"]);
    expect(await store().dequeue(scope)).toBe("r3");
    expect(await store().dequeue(scope)).toBeUndefined();
  });

  it("markLatest keeps the latest start by time (ties by run id), whatever order the writes come in", async () => {
    const scope = freshId("latest");
    expect(await store().latest(scope)).toBeUndefined();
    await store().markLatest(scope, "r2", T + 2);
    await store().markLatest(scope, "r1", T + 1); // late write of an earlier start: ignored
    expect(await store().latest(scope)).toBe("r2");
    await new LostResponseStore(store()).lose("markLatest").store.markLatest(scope, "r3", T + 3);
    expect(await store().latest(scope)).toBe("r3");
    await store().markLatest(scope, "r0", T + 3); // a tie goes to the greater run id
    expect(await store().latest(scope)).toBe("r3");
  });
}
