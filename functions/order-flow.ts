/**
 * The order workflow: reserve stock, score fraud, wait up to 24 h for a human approval, charge,
 * create a shipping label, notify the customer. A saga undoes what was done on a rejection, a
 * timeout, a failed step or a cancellation: refund the charge, release the stock.
 * An order that names an approver emails them an approval link (the webhook's capability URL).
 * Written only against the public API, as a user would.
 */
// zod/mini: the same schemas as classic zod, tree-shakable, so this Lambda's bundle carries only
// the checks it uses (see the bundle figures in docs/guides/performance.md). Classic `zod` works the same way.
import * as z from "zod/mini";
import { CancelledError, durable, StepFailedError } from "waymark";
import { FakePayments } from "./services/payments.ts";
import { FakeShop } from "./services/shop.ts";

export const Order = z.object({
  orderId: z.string().check(z.minLength(1)),
  sku: z.string().check(z.minLength(1)),
  quantity: z.int().check(z.positive()),
  amount: z.number().check(z.positive()),
  email: z.email(),
  address: z.string().check(z.minLength(1)),
  /** Who approves this order: they are emailed a link that approves or rejects it. */
  approverEmail: z.optional(z.email()),
});
export type Order = z.infer<typeof Order>;

export const Approval = z.object({
  approved: z.boolean(),
  approver: z.string().check(z.minLength(1)),
  note: z.optional(z.string().check(z.maxLength(500))),
});

// The fake providers keep their state in files under this folder (created on first use).
const dir = () => process.env.WAYMARK_DEMO_DIR ?? ".waymark/demo";
let services: { dir: string; shop: FakeShop; payments: FakePayments } | undefined;
function use(): { shop: FakeShop; payments: FakePayments } {
  if (services?.dir !== dir()) services = { dir: dir(), shop: new FakeShop(dir()), payments: new FakePayments(dir()) };
  return services;
}

export const orderFlow = durable(
  { name: "order-flow", input: Order, signals: { approval: Approval } },
  async (order, step) => {
    // Every step that changes the world registers how to undo it; a rejection, a timeout or a
    // cancellation (client.cancel, or CancelledError at any point) runs the undo steps, newest first.
    const saga = step.saga();
    try {
      const hold = await step.run("reserve", ({ idempotencyKey }) => use().shop.reserve(order.sku, order.quantity, idempotencyKey));
      saga.add("release", ({ idempotencyKey }) => use().shop.release(hold.holdId, idempotencyKey));
      const fraud = await step.run("fraud_check", ({ idempotencyKey }) => use().shop.fraudScore(order.orderId, order.amount, idempotencyKey));

      // Only an order that names an approver asks for a link, so hosts without a webhook secret still run the rest.
      const approverEmail = order.approverEmail;
      const approval = await step.waitForSignal("approval", {
        timeout: "24h",
        summary: `Order ${order.orderId}: ${order.quantity} × ${order.sku} for ${order.amount.toFixed(2)} EUR, shipping to ${order.address} (fraud score ${fraud.score})`,
        ...(approverEmail === undefined
          ? {}
          : { notify: (link) => use().shop.sendApprovalRequest(approverEmail, order.orderId, link, `${link.runId}/${link.waitId}:notify`) }),
      });
      if (!approval.received || !approval.payload.approved) {
        await saga.compensate();
        return { status: approval.received ? "rejected" : "expired", orderId: order.orderId, fraudScore: fraud.score };
      }

      const charge = await step.run("charge", ({ idempotencyKey }) =>
        use().payments.charge(order.orderId, order.amount, { idempotencyKey }),
      );
      saga.add("refund", ({ idempotencyKey }) => use().shop.refund(charge.chargeId, idempotencyKey));
      const label = await step.run("create_label", ({ idempotencyKey }) => use().shop.label(order.orderId, order.address, idempotencyKey));
      await step.run("notify_customer", ({ idempotencyKey }) =>
        use().shop.notify(order.email, `Order ${order.orderId} ships with ${label.carrier} ${label.trackingNumber}`, idempotencyKey),
      );
      return {
        status: "shipped",
        orderId: order.orderId,
        chargeId: charge.chargeId,
        trackingNumber: label.trackingNumber,
        approvedBy: approval.payload.approver,
      };
    } catch (err) {
      // A step whose retries are spent, or the run's cancellation: undo what was done, then fail.
      if (err instanceof StepFailedError || err instanceof CancelledError) await saga.compensate();
      throw err;
    }
  },
);
