/**
 * The seed's two-step flow (functions/charge-flow.ts) end to end on the local runtime: a SQLite
 * journal file, the timer loop, the fake payment provider's ledger.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createLocalRuntime } from "waymark/local";
import { chargeFlow } from "../../functions/charge-flow.ts";
import { FakePayments } from "../../functions/services/payments.ts";
import { FakeShop } from "../../functions/services/shop.ts";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "waymark-charge-"));
  process.env.WAYMARK_DEMO_DIR = dir;
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe("the charge flow (functions/charge-flow.ts) on the local runtime", () => {
  it("charges the card once, then sends the receipt", async () => {
    const rt = createLocalRuntime({ workflows: [chargeFlow], file: join(dir, "journal.db") });
    rt.start();
    try {
      await rt.client.start(chargeFlow, { runId: "charge-1", input: { orderId: "9001", amount: 42, email: "kim@example.com" } });
      const run = await rt.waitForRun("charge-1");
      const charges = new FakePayments(dir).charges();
      expect(run).toMatchObject({ status: "completed", result: { chargeId: charges[0]?.chargeId } });
      expect(charges).toMatchObject([{ orderId: "9001", amount: 42, idempotencyKey: "charge-1/charge_card" }]);
      expect(new FakeShop(dir).calls().map((c) => `${c.op} ${c.key}`)).toEqual(["send charge-1/send_receipt"]);
      const { entries } = await rt.client.history("charge-1");
      expect(entries.flatMap((e) => (e.record?.type === "step" ? [e.record.stepId] : []))).toEqual(["charge_card", "send_receipt"]);
    } finally {
      await rt.close();
    }
  });

  it("starting the same run again is the same run: no second charge", async () => {
    const rt = createLocalRuntime({ workflows: [chargeFlow], file: join(dir, "journal.db") });
    rt.start();
    try {
      const input = { orderId: "9002", amount: 10, email: "kim@example.com" };
      await rt.client.start(chargeFlow, { runId: "charge-2", input });
      await rt.waitForRun("charge-2");
      expect((await rt.client.start(chargeFlow, { runId: "charge-2", input })).created).toBe(false);
      await rt.waitForRun("charge-2");
      expect(new FakePayments(dir).charges()).toHaveLength(1);
    } finally {
      await rt.close();
    }
  });
});
