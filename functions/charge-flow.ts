/**
 * The seed's two-step flow: charge the card, then send the receipt. If the process dies after
 * `charge_card`, the next invocation takes the charge from the journal and only sends the receipt.
 */
import { z } from "zod";
import { durable } from "waymark";
import { FakePayments } from "./services/payments.ts";
import { FakeShop } from "./services/shop.ts";

const dir = () => process.env.WAYMARK_DEMO_DIR ?? ".waymark/demo";

export const ChargeRequest = z.object({ orderId: z.string().min(1), amount: z.number().positive(), email: z.string().email() });

/**
 * Charges once, then mails the receipt. `durable()`'s result is also the Lambda handler.
 *
 * @example
 * ```ts
 * const rt = createLocalRuntime({ workflows: [chargeFlow] });
 * rt.start();
 * const charge = rt.client.handle(chargeFlow, "charge-9001");
 * await charge.start({ orderId: "9001", amount: 42, email: "kim@example.com" });
 * const { chargeId } = await charge.result({ timeout: "1m" });
 * ```
 */
export const chargeFlow = durable({ name: "charge-flow", input: ChargeRequest }, async (order, step) => {
  const charge = await step.run("charge_card", ({ idempotencyKey }) => new FakePayments(dir()).charge(order.orderId, order.amount, { idempotencyKey }));
  await step.run("send_receipt", ({ idempotencyKey }) =>
    new FakeShop(dir()).notify(order.email, `Receipt for order ${order.orderId}: ${order.amount} (${charge.chargeId})`, idempotencyKey),
  );
  return { chargeId: charge.chargeId };
});
