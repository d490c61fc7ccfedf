/**
 * The workflow on waymark/testing: an in-memory journal and a virtual clock, so three days of
 * waiting take milliseconds. `rt.advance` moves time and fires the sleeps and timeouts due.
 */
import { describe, expect, it } from "vitest";
import { InvalidInputError } from "waymark";
import { createTestRuntime } from "waymark/testing";
import { type Expense, expenseApproval } from "../src/expense.js";

const claim: Expense = { id: "exp-1", employee: "kim@example.com", amount: 240, description: "train to Lyon" };

function runtime() {
  return createTestRuntime({ workflows: [expenseApproval] });
}

describe("expense approval", () => {
  it("waits for a decision, then pays once, an hour after the approval", async () => {
    const rt = runtime();
    await rt.start(expenseApproval, { runId: "exp-1", input: claim });
    expect(await rt.get("exp-1")).toMatchObject({ status: "suspended", waitingFor: "signal:decision" });

    await rt.signal("exp-1", "decision", { approved: true, approver: "ana@example.com" });
    await rt.advance("59m");
    expect((await rt.get("exp-1")).status).toBe("suspended"); // the payout delay
    await rt.advance("1m");

    const run = await rt.get("exp-1");
    expect(run.status).toBe("completed");
    expect(run.result).toEqual({ status: "paid", payoutId: "po_exp-1/pay" });
    // The payout ran once, with the run's stable idempotency key.
    expect(rt.events.filter((e) => e.stepId === "pay" && e.outcome === "completed")).toHaveLength(1);
  });

  it("a rejected claim is not paid", async () => {
    const rt = runtime();
    await rt.start(expenseApproval, { runId: "exp-2", input: claim });
    await rt.signal("exp-2", "decision", { approved: false, approver: "ana@example.com", note: "not a business trip" });
    expect((await rt.get("exp-2")).result).toEqual({ status: "rejected", by: "ana@example.com" });
  });

  it("expires when nobody decides within 3 days", async () => {
    const rt = runtime();
    await rt.start(expenseApproval, { runId: "exp-3", input: claim });
    await rt.advance("3d");
    expect((await rt.get("exp-3")).result).toEqual({ status: "expired" });
  });

  it("pays a small claim without asking anyone", async () => {
    const rt = runtime();
    await rt.start(expenseApproval, { runId: "exp-4", input: { ...claim, amount: 12 } });
    await rt.advance("1h");
    expect((await rt.get("exp-4")).result).toEqual({ status: "paid", payoutId: "po_exp-4/pay" });
  });

  it("refuses a claim or a decision that fails its schema, and writes nothing", async () => {
    const rt = runtime();
    await expect(rt.start(expenseApproval, { runId: "exp-5", input: { ...claim, amount: -1 } })).rejects.toBeInstanceOf(InvalidInputError);
    await rt.start(expenseApproval, { runId: "exp-6", input: claim });
    await expect(rt.signal("exp-6", "decision", { approved: "yes" })).rejects.toBeInstanceOf(InvalidInputError);
    expect((await rt.get("exp-6")).status).toBe("suspended");
  });
});
