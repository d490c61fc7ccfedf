/**
 * An example of `step.transact`: reserve stock and write a ledger line exactly once, in the same
 * transaction as the step's journal record. Table names come from the environment (the construct
 * user sets them beside `fn.grantTransact(table)`); the local and test runtimes emulate them.
 */
import { z } from "zod";
import { durable, TransactConditionFailedError } from "waymark";

const Order = z.object({ orderId: z.string(), sku: z.string(), qty: z.number().int().positive() });

const STOCK = process.env.STOCK_TABLE ?? "stock";
const LEDGER = process.env.LEDGER_TABLE ?? "ledger";

export const reserveFlow = durable({ name: "reserve-flow", input: Order }, async (order, step) => {
  try {
    const line = await step.transact("reserve", (tx) => {
      tx.update({
        table: STOCK,
        key: { sku: order.sku },
        update: "SET available = available - :n",
        condition: "available >= :n",
        values: { ":n": order.qty },
      });
      tx.put({ table: LEDGER, item: { pk: order.orderId, sk: "reserve", qty: order.qty }, condition: "attribute_not_exists(pk)" });
      return { reserved: order.qty };
    });
    return { status: "reserved" as const, ...line };
  } catch (err) {
    if (err instanceof TransactConditionFailedError && err.table === STOCK) return { status: "out-of-stock" as const };
    throw err;
  }
});

export const handler = reserveFlow;
