import { join } from "node:path";
import { JsonLinesFile } from "./ledger-file.ts";

export interface Refund {
  refundId: string;
  chargeId: string;
  amount: number;
  idempotencyKey: string;
  at: string;
}

/**
 * A fake refund API that deduplicates by idempotency key, like a real payment provider: a retried
 * refund returns the first one. Its ledger is a file, so it shows how many refunds really happened,
 * even across a killed process.
 */
export class FakeRefunds {
  private readonly ledger: JsonLinesFile<Refund>;

  constructor(dir: string) {
    this.ledger = new JsonLinesFile(join(dir, "refunds-ledger.jsonl"));
  }

  refund(chargeId: string, amount: number, options: { idempotencyKey: string }): Refund {
    const seen = this.ledger.read().find((r) => r.idempotencyKey === options.idempotencyKey);
    if (seen) return seen;
    const refund: Refund = { refundId: `re_${chargeId}_${this.ledger.read().length + 1}`, chargeId, amount, idempotencyKey: options.idempotencyKey, at: new Date().toISOString() };
    this.ledger.append(refund);
    return refund;
  }

  /** Every refund ever made, in order. */
  refunds(): Refund[] {
    return this.ledger.read();
  }
}
