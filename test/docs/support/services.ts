/**
 * Stand-ins for the services the docs' samples call (`import { payments } from "./services.ts"`
 * in a sample is your own provider's client in your project). Each answers a repeated idempotency
 * key with the same result, as a real provider that deduplicates does.
 */
import { z } from "zod";

export interface ChargeAnswer {
  status: "ok" | "declined" | "busy";
  chargeId: string;
}

export const payments = {
  async refund(chargeId: string, amount: number, options: { idempotencyKey: string | undefined }): Promise<{ refundId: string; amount: number }> {
    return { refundId: `re_${options.idempotencyKey ?? chargeId}`, amount };
  },
  async charge(orderId: string, amount: number, options: { idempotencyKey: string; signal?: AbortSignal }): Promise<ChargeAnswer> {
    options.signal?.throwIfAborted();
    return { status: amount > 0 ? "ok" : "declined", chargeId: `ch_${options.idempotencyKey}` };
  },
};

export const shop = {
  async reserve(sku: string): Promise<{ holdId: string }> {
    return { holdId: `hold-${sku}` };
  },
  async release(holdId: string, idempotencyKey: string): Promise<{ released: string; idempotencyKey: string }> {
    return { released: holdId, idempotencyKey };
  },
};

/** A stream of 2,500 items: the cursor after `cursor`, or undefined at the stream's end. */
export const source = {
  async next(cursor: string): Promise<string | undefined> {
    const next = Number(cursor || "0") + 1;
    return next > 2_500 ? undefined : String(next);
  },
};

/** The approval signal of the workflow a `body` sample is wrapped in (test/docs/samples-prelude.ts). */
export const Approval = z.object({ approved: z.boolean(), approver: z.string() });
export const SampleSignals = { approval: Approval };
export const SampleInput = z.object({});

/** The `body` samples' own services and data (your provider's clients, your run's values). */
export const sms = {
  async send(phone: string, text: string): Promise<{ messageId: string }> {
    return { messageId: `sms-${phone}-${text.length}` };
  },
  async lookup(phone: string, text: string): Promise<{ sent: boolean }> {
    return { sent: phone.length > 0 && text.length > 0 };
  },
};
export const phone = "+33 6 12 34 56 78";
export const text = "Your order has shipped";
export const order = { orderId: "order-8472", sku: "LAMP-01", amount: 129.5 };
export const inventory = {
  async reserve(sku: string): Promise<{ holdId: string }> {
    return { holdId: `hold-${sku}` };
  },
};
export const fraud = {
  async score(o: { orderId: string; amount: number }): Promise<{ score: number }> {
    return { score: o.amount > 1000 ? 80 : 5 };
  },
};
export const mailer = {
  sent: [] as Array<{ to: string; url: string | undefined }>,
  async send(to: string, url: string | undefined): Promise<void> {
    mailer.sent.push({ to, url });
  },
};
export function audit(sender: unknown): void {
  void sender;
}
