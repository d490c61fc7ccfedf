/**
 * The step.transact workflow of the AWS end-to-end tests (this process and the child "Lambda"):
 * reserve stock and write a ledger line exactly once, optionally nap, then a next step. Every
 * body execution is recorded in the StepLedger file by its idempotency key, so a test can kill
 * the child at a precise point and count executions across processes.
 */
import { setTimeout as delay } from "node:timers/promises";
import { z } from "zod";
import { durable } from "waymark";
import type { StepLedger } from "../aws-e2e/step-ledger.ts";

export interface UserTables {
  stock: string;
  ledger: string;
}

const Input = z.object({ orderId: z.string(), sku: z.string(), qty: z.number().int().positive(), holdInReserveMs: z.number().default(0), holdAfterMs: z.number().default(0), nap: z.string().optional() });

export function awsTransactFlows(ledger: StepLedger, tables: UserTables) {
  const txFlow = durable({ name: "tx-flow", input: Input }, async (order, step) => {
    const line = await step.transact("reserve", async (tx, { idempotencyKey, attempt }) => {
      ledger.record(idempotencyKey, attempt);
      tx.update({ table: tables.stock, key: { sku: order.sku }, update: "SET available = available - :n", condition: "available >= :n", values: { ":n": order.qty } });
      tx.put({ table: tables.ledger, item: { pk: order.orderId, sk: "reserve", qty: order.qty }, condition: "attribute_not_exists(pk)" });
      if (order.holdInReserveMs > 0) await delay(order.holdInReserveMs);
      return { reserved: order.qty };
    });
    if (order.nap) await step.sleep("nap", order.nap as "1s");
    await step.run("after", async ({ idempotencyKey, attempt }) => {
      ledger.record(idempotencyKey, attempt);
      if (order.holdAfterMs > 0) await delay(order.holdAfterMs);
    });
    return line;
  });
  return [txFlow];
}
