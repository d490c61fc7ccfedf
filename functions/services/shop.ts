import { join } from "node:path";
import { JsonLinesFile } from "./ledger-file.ts";

/** Calls made to the fake inventory, fraud, carrier and mail services, for the demo to show. */
export interface ServiceCall {
  service: string;
  op: string;
  key: string;
  at: string;
}

/** Fake inventory, fraud scoring, carrier and mailer, each logging its calls to one file. */
export class FakeShop {
  private readonly log: JsonLinesFile<ServiceCall>;

  constructor(dir: string) {
    this.log = new JsonLinesFile(join(dir, "service-calls.jsonl"));
  }

  private record(service: string, op: string, key: string): void {
    this.log.append({ service, op, key, at: new Date().toISOString() });
  }

  reserve(sku: string, quantity: number, key: string): { holdId: string; sku: string; quantity: number } {
    this.record("inventory", "reserve", key);
    return { holdId: `hold_${sku}_${quantity}`, sku, quantity };
  }

  release(holdId: string, key: string): { released: string } {
    this.record("inventory", "release", key);
    return { released: holdId };
  }

  fraudScore(orderId: string, amount: number, key: string): { score: number; review: boolean } {
    this.record("fraud", "score", key);
    const score = Math.round(((amount % 97) / 97) * 100) / 100;
    return { score, review: amount > 100 };
  }

  label(orderId: string, address: string, key: string): { trackingNumber: string; carrier: string } {
    this.record("carrier", "label", key);
    return { trackingNumber: `1Z${orderId.replace(/\D/g, "").padStart(8, "0")}`, carrier: "UPS" };
  }

  notify(email: string, text: string, key: string): { messageId: string } {
    this.record("mailer", "send", key);
    return { messageId: `msg_${key.length}_${text.length}` };
  }

  refund(chargeId: string, key: string): { refunded: string } {
    this.record("payments", "refund", key);
    return { refunded: chargeId };
  }

  calls(): ServiceCall[] {
    return this.log.read();
  }
}
