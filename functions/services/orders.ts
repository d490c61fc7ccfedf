/** A fake order database for the support agent: a few fixed orders, looked up by id. */
export interface OrderRecord {
  orderId: string;
  item: string;
  amount: number;
  chargeId: string;
  status: "processing" | "delivered";
}

const ORDERS: readonly OrderRecord[] = [
  { orderId: "8472", item: "LAMP-01 desk lamp", amount: 129.5, chargeId: "ch_8472_1", status: "delivered" },
  { orderId: "8473", item: "MUG-07 mug, set of 4", amount: 24, chargeId: "ch_8473_1", status: "processing" },
];

/** Looks an order up; `undefined` when there is no such order. */
export function lookupOrder(orderId: string): OrderRecord | undefined {
  return ORDERS.find((o) => o.orderId === orderId);
}
