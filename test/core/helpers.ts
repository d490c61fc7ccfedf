import { z } from "zod";

/** A fake side-effecting service that counts calls per idempotency key. */
export class Counter {
  readonly calls: string[] = [];
  hit(label: string): number {
    this.calls.push(label);
    return this.calls.filter((c) => c === label).length;
  }
  count(label: string): number {
    return this.calls.filter((c) => c === label).length;
  }
}

export const Empty = z.object({}).strict();
export const Approval = z.object({ approved: z.boolean(), approver: z.string().min(1) });
