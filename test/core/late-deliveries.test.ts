/**
 * Where replay delivers a result written by an invocation that had lost its lease, from the
 * records alone (lib/core/delivery-order.ts, `lateDeliveries`). Positions are numbered per scope;
 * an invocation numbers its own from one past the largest it loaded, so a record is late for a
 * later invocation exactly when that invocation wrote a position at or before the record's own.
 */
import { describe, expect, it } from "vitest";
import { DeliveryOrder, deliveryOrder, lateDeliveries, type Placement, type RecordedDelivery } from "../../lib/core/delivery-order.ts";

const d = (stepId: string, seq: number, inv: number, at = seq): RecordedDelivery => ({ stepId, seq, inv, at });
const order = (recorded: RecordedDelivery[], places = new Map<string, Placement>()) => {
  const { deliveries, unplaced } = lateDeliveries(recorded, places);
  return { ids: deliveryOrder(deliveries).map((x) => `${x.stepId}@${x.seq}`), unplaced };
};

describe("late results", () => {
  it("leaves a journal without late records as it was", () => {
    const recorded = [d("a", 1, 1), d("b", 2, 1), d("c", 3, 2), d("d", 4, 3)];
    expect(order(recorded)).toEqual({ ids: ["a@1", "b@2", "c@3", "d@4"], unplaced: [] });
  });

  it("delivers a zombie's record after every position of the holder that never loaded it", () => {
    // Invocation 2 wrote 3, 4, 5 (it loaded up to 2); invocation 1's record at 3 landed after that.
    const recorded = [d("book", 1, 1), d("b-fails", 3, 2), d("unbook1", 4, 2), d("unbook0", 5, 2), d("a-slow", 3, 1, 99), d("book1", 2, 1)];
    expect(order(recorded)).toEqual({ ids: ["book@1", "book1@2", "b-fails@3", "unbook1@4", "unbook0@5", "a-slow@6"], unplaced: [{ stepId: "a-slow", seq: 6 }] });
  });

  it("keeps a journaled place, even when later invocations wrote positions past it", () => {
    // Invocation 3 found a-slow late and placed it at 6, then wrote 7; 4 wrote 8.
    const recorded = [d("book", 1, 1), d("b-fails", 2, 2), d("a-slow", 2, 1, 99), d("c", 7, 3), d("e", 8, 4)];
    const places = new Map([["a-slow", { seq: 6, inv: 3 }]]);
    expect(order(recorded, places)).toEqual({ ids: ["book@1", "b-fails@2", "a-slow@6", "c@7", "e@8"], unplaced: [] });
    // Without its place, the same records put it last: the place is what keeps every replay alike.
    expect(order(recorded).ids.at(-1)).toBe("a-slow@9");
  });

  it("puts a record that landed after two holders loaded past both (the second never saw it either)", () => {
    // 2 wrote 3..4 and lost its lease; 3 loaded (no a-slow yet) and wrote 5..6; then a-slow landed.
    const recorded = [d("x", 1, 1), d("y", 2, 1), d("p", 3, 2), d("q", 4, 2), d("r", 5, 3), d("s", 6, 3), d("a-slow", 3, 1, 99)];
    expect(order(recorded).ids).toEqual(["x@1", "y@2", "p@3", "q@4", "r@5", "s@6", "a-slow@7"]);
  });

  it("numbers each scope apart: a late record in one scope moves nothing in another", () => {
    const recorded = [d("m[0]/a", 1, 1), d("m[0]/b", 1, 2), d("top", 1, 2), d("m[1]/a", 1, 1)];
    const { deliveries, unplaced } = lateDeliveries(recorded, new Map());
    expect(unplaced).toEqual([{ stepId: "m[0]/a", seq: 2 }]);
    expect(deliveries.find((x) => x.stepId === "m[1]/a")?.seq).toBe(1);
    expect(deliveries.find((x) => x.stepId === "top")?.seq).toBe(1);
  });

  it("places several late records in the order they would have been delivered", () => {
    const recorded = [d("a", 1, 1), d("h", 2, 2), d("z2", 3, 1, 50), d("z1", 2, 1, 60)];
    // Past every position recorded, the late ones' own included.
    expect(order(recorded)).toEqual({ ids: ["a@1", "h@2", "z1@4", "z2@5"], unplaced: [{ stepId: "z1", seq: 4 }, { stepId: "z2", seq: 5 }] });
  });
});

describe("a position missing below recorded ones (a write in flight, or lost)", () => {
  const tick = () => new Promise((r) => setTimeout(r, 1));

  it("holds the recorded results above it while a step of the scope may still record", async () => {
    const order = new DeliveryOrder([d("x", 1, 1), d("b", 3, 1), d("c", 4, 1)]);
    expect(order.turn("x")).toBeUndefined();
    const recorded = order.running() ?? (() => {});
    expect(order.held).toBe(true);
    let delivered = false;
    void order.turn("b")?.then(() => (delivered = true));
    for (let i = 0; i < 5; i++) await tick();
    expect([delivered, order.stalled, order.pending]).toEqual([false, false, 1]);
    // The step records (it takes position 5): b, then c, then it are delivered in turn.
    expect(order.take("a")).toBe(5);
    recorded();
    recorded(); // once only
    while (!delivered) await tick();
    expect(order.held).toBe(false);
    expect(order.turn("c")).toBeUndefined();
    expect(order.turn("a")).toBeUndefined();
  });

  it("holds nothing below the hole, nor without one", () => {
    const below = new DeliveryOrder([d("x", 1, 1), d("y", 2, 1), d("z", 4, 1)]);
    below.running();
    expect([below.turn("x"), below.turn("y")]).toEqual([undefined, undefined]);
    expect(below.held).toBe(true);
    const whole = new DeliveryOrder([d("x", 1, 1), d("y", 2, 2), d("z", 3, 2)]);
    expect(whole.running()).toBeUndefined();
    expect([whole.held, whole.turn("x"), whole.turn("y"), whole.turn("z")]).toEqual([false, undefined, undefined, undefined]);
  });
});
