/**
 * Workflows whose runs have every shape the run page's waterfall draws, for the browser test
 * (`waymark dev test/ui/timeline-flows.ts`): sequential steps, a retried step, a `Promise.all`
 * of two branches, a `step.map`, a wait answered by a signal, a sleep, a child run; and a trip
 * whose booking fails for good and compensates before the run fails.
 */
import { z } from "zod";
import { NonRetryableError, durable } from "waymark";

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const Approval = z.object({ approved: z.boolean(), approver: z.string().min(1) });

export const payment = durable({ name: "payment", input: z.object({ amount: z.number() }).strict() }, async (input, step) => {
  await step.run("authorize", () => pause(120));
  await step.sleep("settle", "400ms");
  return step.run("capture", async () => (await pause(60), { captured: input.amount }));
});

export const fulfilment = durable({ name: "fulfilment", input: z.object({ orderId: z.string() }).strict(), signals: { approval: Approval } }, async (input, step) => {
  await step.run("reserve", () => pause(150));
  await step.run("quote", async ({ attempt }) => {
    await pause(60);
    if (attempt < 2) throw new Error("rate service busy");
    return { price: 42 };
  }, { retries: { attempts: 3, initialDelay: "400ms", jitter: 0 } });
  await Promise.all([step.run("fraud_check", () => pause(400)), step.run("stock_check", () => pause(250))]);
  await step.map("label", ["north", "south", "east", "west"], (zone, item) => item.run("print", async () => (await pause(zone.length * 60), `${input.orderId}-${zone}`)), { concurrency: 2 });
  const approval = await step.waitForSignal("approval", { timeout: "1h" });
  if (!approval.received || !approval.payload.approved) return { status: "rejected" };
  await step.sleep("cool-off", "600ms");
  const paid = await step.invoke("pay", payment, { input: { amount: 42 } });
  await step.run("ship", () => pause(100));
  return { status: "shipped", paid };
});

export const trip = durable({ name: "trip", input: z.object({ city: z.string() }).strict() }, async (input, step) => {
  const saga = step.saga();
  await step.run("book_flight", () => pause(120));
  saga.add("cancel_flight", () => pause(90));
  try {
    await step.run("book_hotel", async () => {
      await pause(80);
      throw new NonRetryableError(`no rooms in ${input.city}`);
    });
  } catch (err) {
    await saga.compensate();
    throw err;
  }
});
