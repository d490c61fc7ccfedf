import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { createTestRuntime } from "waymark/testing";
import { orderFlow, type Order } from "../../functions/order-flow.ts";
import { FakePayments } from "../../functions/services/payments.ts";
import { FakeShop } from "../../functions/services/shop.ts";

const order: Order = { orderId: "8472", sku: "LAMP-01", quantity: 1, amount: 129.5, email: "kim@example.com", address: "1 Harbour St" };
let dir: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "waymark-order-"));
  process.env.WAYMARK_DEMO_DIR = dir;
});

describe("the order workflow (functions/order-flow.ts) on the test runtime", () => {
  it("ships an approved order and charges once", async () => {
    const rt = createTestRuntime({ workflows: [orderFlow] });
    await rt.start(orderFlow, { runId: "o-1", input: order });
    expect(await rt.get("o-1")).toMatchObject({ status: "suspended", waitingFor: "signal:approval" });
    await rt.signal("o-1", "approval", { approved: true, approver: "ana" });
    expect((await rt.get("o-1")).result).toMatchObject({ status: "shipped", approvedBy: "ana", trackingNumber: "1Z00008472" });
    expect(new FakePayments(dir).charges()).toHaveLength(1);
  });

  it("releases the reservation when the approver rejects", async () => {
    const rt = createTestRuntime({ workflows: [orderFlow] });
    await rt.start(orderFlow, { runId: "o-2", input: order });
    await rt.signal("o-2", "approval", { approved: false, approver: "ana", note: "address looks wrong" });
    expect((await rt.get("o-2")).result).toMatchObject({ status: "rejected" });
    expect(new FakeShop(dir).calls().map((c) => `${c.service}.${c.op}`)).toEqual(["inventory.reserve", "fraud.score", "inventory.release"]);
    expect(new FakePayments(dir).charges()).toHaveLength(0);
  });

  it("releases the reservation when nobody approves within 24 hours", async () => {
    const rt = createTestRuntime({ workflows: [orderFlow] });
    await rt.start(orderFlow, { runId: "o-3", input: order });
    await rt.advance("24h"); // nobody approved: the wait times out
    expect((await rt.get("o-3")).result).toMatchObject({ status: "expired" });
    expect(new FakeShop(dir).calls().at(-1)).toMatchObject({ service: "inventory", op: "release", key: "o-3/release" });
  });
});
