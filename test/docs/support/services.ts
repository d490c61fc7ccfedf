/**
 * Stand-ins for the services the docs' samples call (`import { payments } from "./services.ts"`
 * in a sample is your own provider's client in your project). Each answers a repeated idempotency
 * key with the same result, as a real provider that deduplicates does.
 */
export interface ChargeAnswer {
  status: "ok" | "declined" | "busy";
  chargeId: string;
}

export const payments = {
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

export const source = {
  async next(cursor: string): Promise<string> {
    return String(Number(cursor || "0") + 1);
  },
};
