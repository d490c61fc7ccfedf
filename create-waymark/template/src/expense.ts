/**
 * An expense claim, approved by a person and then paid: a durable workflow. Each step's result
 * is written to the journal, so a crash, a deploy or a three-day wait resumes where it stopped,
 * and nothing that already happened (the payout above all) happens twice.
 */
import { z } from "zod";
import { durable } from "waymark";
import { pay } from "./payments.js";

/** A claim as an employee submits it. `durable()` checks every run's input against it. */
export const Expense = z.object({
  id: z.string().min(1),
  employee: z.string().email(),
  amount: z.number().positive(),
  description: z.string().min(1),
});
export type Expense = z.infer<typeof Expense>;

/** The approver's answer. The dashboard and the approval page draw their form from it. */
export const Decision = z.object({
  approved: z.boolean(),
  approver: z.string().min(1),
  note: z.string().optional(),
});

/** Claims up to this amount are paid without asking anyone. */
export const AUTO_APPROVE_LIMIT = 100;

export const expenseApproval = durable(
  { name: "expense-approval", input: Expense, signals: { decision: Decision } },
  async (expense, step) => {
    const policy = await step.run("check-policy", () => ({ needsApproval: expense.amount > AUTO_APPROVE_LIMIT }));
    if (policy.needsApproval) {
      // The run suspends here (no process waits) until the decision arrives or 3 days pass.
      const decision = await step.waitForSignal("decision", {
        timeout: "3d",
        summary: `${expense.employee} claims ${expense.amount} for ${expense.description}`,
      });
      if (!decision.received) return { status: "expired" as const };
      if (!decision.payload.approved) return { status: "rejected" as const, by: decision.payload.approver };
    }
    // An hour to take back a mistaken approval (cancel the run) before the money moves.
    await step.sleep("payout-delay", "1h");
    // The key is the same on every retry and replay of this step: the provider pays once.
    const payout = await step.run("pay", ({ idempotencyKey }) => pay(expense, { idempotencyKey }));
    return { status: "paid" as const, payoutId: payout.id };
  },
);
