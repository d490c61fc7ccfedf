import { join } from "node:path";
import { JsonLinesFile } from "./ledger-file.ts";

export interface Charge {
  chargeId: string;
  orderId: string;
  amount: number;
  idempotencyKey: string;
  at: string;
}

/**
 * A fake payment provider that behaves like a real one where it matters: a charge with an
 * idempotency key it has seen returns the first charge instead of charging again. Its ledger
 * is a file, so it outlives a killed worker and shows how many times a card was charged.
 */
export class FakePayments {
  private readonly ledger: JsonLinesFile<Charge>;

  constructor(dir: string) {
    this.ledger = new JsonLinesFile(join(dir, "payments-ledger.jsonl"));
  }

  charge(orderId: string, amount: number, options: { idempotencyKey: string }): Charge {
    const seen = this.ledger.read().find((c) => c.idempotencyKey === options.idempotencyKey);
    if (seen) return seen;
    const charge: Charge = {
      chargeId: `ch_${orderId}_${this.ledger.read().length + 1}`,
      orderId,
      amount,
      idempotencyKey: options.idempotencyKey,
      at: new Date().toISOString(),
    };
    this.ledger.append(charge);
    return charge;
  }

  /** Every charge ever made, in order. */
  charges(): Charge[] {
    return this.ledger.read();
  }
}
