/**
 * The example of docs/guides/transact.md (functions/reserve-flow.ts) on the test runtime and on
 * the local runtime, through their public `tables` API: the same code the guide shows.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createTestRuntime } from "waymark/testing";
import { createLocalRuntime } from "waymark/local";
import { reserveFlow } from "../../functions/reserve-flow.ts";
import { until } from "../support/until.ts";

describe("the guide's example", () => {
  it("on the test runtime: reserved once, then out of stock; the tables show it", async () => {
    const rt = createTestRuntime({ workflows: [reserveFlow], tables: { stock: ["sku"], ledger: ["pk", "sk"] } });
    rt.tables.put("stock", { sku: "A1", available: 5 });
    await rt.start(reserveFlow, { runId: "order-1", input: { orderId: "order-1", sku: "A1", qty: 3 } });
    await rt.start(reserveFlow, { runId: "order-2", input: { orderId: "order-2", sku: "A1", qty: 3 } });
    expect(await rt.handle(reserveFlow, "order-1").result()).toEqual({ status: "reserved", reserved: 3 });
    expect(await rt.handle(reserveFlow, "order-2").result()).toEqual({ status: "out-of-stock" });
    expect(rt.tables.get("stock", { sku: "A1" })).toEqual({ sku: "A1", available: 2 });
    expect(rt.tables.scan("ledger")).toEqual([{ pk: "order-1", sk: "reserve", qty: 3 }]);
    // Starting the same run again is idempotent: nothing is written twice.
    await rt.start(reserveFlow, { runId: "order-1", input: { orderId: "order-1", sku: "A1", qty: 3 } });
    expect(rt.tables.get("stock", { sku: "A1" })).toEqual({ sku: "A1", available: 2 });
  });

  it("on the local runtime: the tables live in the journal file and survive a restart", async () => {
    const dir = mkdtempSync(join(tmpdir(), "waymark-tx-example-"));
    const file = join(dir, "journal.db");
    const tables = { stock: ["sku"], ledger: ["pk", "sk"] } as const;
    try {
      const rt = createLocalRuntime({ workflows: [reserveFlow], file, tables });
      rt.tables.put("stock", { sku: "A1", available: 5 });
      rt.start();
      await rt.client.start(reserveFlow, { runId: "order-1", input: { orderId: "order-1", sku: "A1", qty: 2 } });
      await until("the run to complete", async () => (await rt.client.get("order-1")).status === "completed");
      await rt.close();
      const again = createLocalRuntime({ workflows: [reserveFlow], file, tables });
      expect(again.tables.get("stock", { sku: "A1" })).toEqual({ sku: "A1", available: 3 });
      expect(again.tables.get("ledger", { pk: "order-1", sk: "reserve" })).toEqual({ pk: "order-1", sk: "reserve", qty: 2 });
      await again.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
