/**
 * The workflows the step.transact tests run on every runtime: reserve stock and write a ledger
 * line exactly once, then go on (a sleep, a next step). `calls` counts body executions.
 */
import { z } from "zod";
import { durable, TransactConditionFailedError } from "waymark";

export const Order = z.object({ orderId: z.string(), sku: z.string(), qty: z.number().int().positive(), nap: z.string().optional(), unguarded: z.boolean().optional() });

/** The emulated tables' keys: the same shapes as the DynamoDB Local tables of the AWS tests. */
export const TABLE_KEYS = { stock: ["sku"], ledger: ["pk", "sk"] } as const;

export interface Calls {
  reserve: number;
  after: number;
}

/** `reserve-flow` on tables named `tables.stock` and `tables.ledger` (DynamoDB needs unique names). */
export function reserveFlow(calls: Calls, tables: { stock: string; ledger: string } = { stock: "stock", ledger: "ledger" }, gate?: () => Promise<void>) {
  return durable({ name: "reserve-flow", input: Order }, async (order, step) => {
    let line: { reserved: number } | { status: "out-of-stock"; index: number; table: string };
    try {
      line = await step.transact("reserve", async (tx) => {
        calls.reserve++;
        tx.update({ table: tables.stock, key: { sku: order.sku }, update: "SET available = available - :n", condition: "available >= :n", values: { ":n": order.qty } });
        // `unguarded`: no condition of the user's own, so only the journal record keeps the writes to once.
        tx.put({ table: tables.ledger, item: { pk: order.orderId, sk: "reserve", qty: order.qty }, ...(order.unguarded ? {} : { condition: "attribute_not_exists(pk)" }) });
        await gate?.();
        return { reserved: order.qty };
      });
    } catch (err) {
      if (!(err instanceof TransactConditionFailedError)) throw err;
      line = { status: "out-of-stock", index: err.index, table: err.table };
    }
    if (order.nap) await step.sleep("nap", order.nap as "1s");
    const after = await step.run("after", () => ++calls.after);
    return { line, after };
  });
}
