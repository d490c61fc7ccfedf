import { join } from "node:path";
import { JsonLinesFile } from "./ledger-file.ts";

/** Calls made to the fake inventory, fraud, carrier and mail services, for the demo to show. */
export interface ServiceCall {
  service: string;
  op: string;
  key: string;
  at: string;
}

/** An approval request as the fake mailer "sent" it: the approver's inbox. */
export interface ApprovalMail {
  to: string;
  orderId: string;
  /** The capability URL to approve or reject with (absent when the runtime knows no base URL). */
  url: string | undefined;
  token: string;
  expiresAt: number | undefined;
  key: string;
}

/** Fake inventory, fraud scoring, carrier and mailer, each logging its calls to one file. */
export class FakeShop {
  private readonly log: JsonLinesFile<ServiceCall>;
  private readonly outbox: JsonLinesFile<ApprovalMail>;

  constructor(dir: string) {
    this.log = new JsonLinesFile(join(dir, "service-calls.jsonl"));
    this.outbox = new JsonLinesFile(join(dir, "approval-mails.jsonl"));
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

  /** "Emails" an approver the link that approves or rejects the order. */
  sendApprovalRequest(to: string, orderId: string, link: { url: string | undefined; token: string; expiresAt: number | undefined }, key: string): { messageId: string } {
    this.record("mailer", "approval_request", key);
    this.outbox.append({ to, orderId, url: link.url, token: link.token, expiresAt: link.expiresAt, key });
    return { messageId: `msg_approval_${orderId}` };
  }

  /** The approval requests sent so far, oldest first. */
  approvalMails(): ApprovalMail[] {
    return this.outbox.read();
  }

  refund(chargeId: string, key: string): { refunded: string } {
    this.record("payments", "refund", key);
    return { refunded: chargeId };
  }

  calls(): ServiceCall[] {
    return this.log.read();
  }
}
