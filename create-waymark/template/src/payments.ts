/**
 * Stands in for your payment provider. Replace the body of `pay` with its client, passing the
 * idempotency key through, e.g. `stripe.payouts.create({ amount, currency }, { idempotencyKey })`.
 */
import type { Expense } from "./expense.js";

export interface Payout {
  id: string;
}

export async function pay(expense: Expense, options: { idempotencyKey: string }): Promise<Payout> {
  // A provider answers the same key with the same payout; so does this stand-in.
  return { id: `po_${options.idempotencyKey}` };
}
