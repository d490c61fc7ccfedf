/**
 * The workflow on waymark/testing: an in-memory journal and a virtual clock, so three days of
 * waiting take milliseconds. `rt.advance` moves time and fires the sleeps and timeouts due.
 * `rt.handle(expenseApproval, id)` is one run, typed by the workflow: its input, the decision's
 * payload and the result are checked by TypeScript as well as by the schemas.
 */
import { describe, expect, it } from "vitest";
import { InvalidInputError, RunNotFinishedError } from "waymark";
import { createTestRuntime } from "waymark/testing";
import { type Expense, expenseApproval } from "../src/expense.js";

const claim: Expense = { id: "exp-1", employee: "kim@example.com", amount: 240, description: "train to Lyon" };

function runtime() {
  return createTestRuntime({ workflows: [expenseApproval] });
}

describe("expense approval", () => {
  it("waits for a decision, then pays once, an hour after the approval", async () => {
    const rt = runtime();
    const run = rt.handle(expenseApproval, "exp-1");
    await run.start(claim);
    expect(await run.get()).toMatchObject({ status: "suspended", waitingFor: "signal:decision" });

    await run.signal("decision", { approved: true, approver: "ana@example.com" });
    await rt.advance("59m");
    await expect(run.result()).rejects.toBeInstanceOf(RunNotFinishedError); // the payout delay
    await rt.advance("1m");

    expect(await run.result()).toEqual({ status: "paid", payoutId: "po_exp-1/pay" });
    // The payout ran once, with the run's stable idempotency key.
    expect(rt.events.filter((e) => e.stepId === "pay" && e.outcome === "completed")).toHaveLength(1);
  });

  it("a rejected claim is not paid", async () => {
    const rt = runtime();
    const run = rt.handle(expenseApproval, "exp-2");
    await run.start(claim);
    await run.signal("decision", { approved: false, approver: "ana@example.com", note: "not a business trip" });
    expect(await run.result()).toEqual({ status: "rejected", by: "ana@example.com" });
  });

  it("expires when nobody decides within 3 days", async () => {
    const rt = runtime();
    const run = rt.handle(expenseApproval, "exp-3");
    await run.start(claim);
    await rt.advance("3d");
    expect((await run.result()).status).toBe("expired");
  });

  it("pays a small claim without asking anyone", async () => {
    const rt = runtime();
    const run = rt.handle(expenseApproval, "exp-4");
    await run.start({ ...claim, amount: 12 });
    await rt.advance("1h");
    expect(await run.result()).toEqual({ status: "paid", payoutId: "po_exp-4/pay" });
  });

  it("refuses a claim or a decision that fails its schema, and writes nothing", async () => {
    const rt = runtime();
    await expect(rt.handle(expenseApproval, "exp-5").start({ ...claim, amount: -1 })).rejects.toBeInstanceOf(InvalidInputError);
    const run = rt.handle(expenseApproval, "exp-6");
    await run.start(claim);
    // TypeScript refuses this payload too; the schema refuses it at run time for callers that skip the types.
    // @ts-expect-error -- `approved` is a boolean, and `approver` is required
    await expect(run.signal("decision", { approved: "yes" })).rejects.toBeInstanceOf(InvalidInputError);
    expect((await run.get()).status).toBe("suspended");
  });
});
