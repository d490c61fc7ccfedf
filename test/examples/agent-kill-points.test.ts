/**
 * The AI SDK refund agent killed with SIGKILL at every point of its loop, on SQLite with real
 * worker processes: after each step's record (`<outcome>:<stepId>`), and inside each step after
 * its effect but before its record (`body:<stepId>`). A second worker finishes the run. Recorded
 * model calls and tool calls are never repeated; only the step caught in the gap runs again,
 * with the same idempotency key, so the customer is refunded exactly once in every case.
 */
import { describe, it } from "vitest";
import type { SupportTicket } from "../../functions/refund-agent.ts";
import { AgentLab } from "./agent-lab.ts";

const ticket: SupportTicket = { ticketId: "T-9", customerEmail: "kim@example.com", message: "The lamp from order 8472 arrived broken. Can I get a refund?" };
const STEPS = ["model", "tool.lookup_order", "model#2", "tool.issue_refund", "model#3"];
const TURN: Record<string, number> = { model: 1, "model#2": 2, "model#3": 3 };

const points = [
  ...["model", "tool.lookup_order", "model#2", "tool.issue_refund", "model#3"].map((s) => `completed:${s}`),
  "resolved:refund_approval",
  ...STEPS.map((s) => `body:${s}`),
];

describe.concurrent("the AI SDK refund agent killed at every point, on SQLite with real processes", () => {
  it.for(points)("killed at %s: the refund happens once and no recorded call is repeated", { timeout: 90_000 }, async (crashAt, { expect }) => {
    const lab = new AgentLab();
    try {
      const runId = `kill-${crashAt.replace(/[^a-z0-9]/gi, "-")}`;
      await lab.client.start("refund-agent", { runId, input: ticket });
      await lab.client.signal(runId, "refund_approval", { approved: true, approver: "ana@shop" }, { signalId: "approval-1" }); // buffered before the wait
      const first = lab.spawn("1", runId, crashAt);
      expect((await first.exit).signal, first.output()).toBe("SIGKILL");
      const second = lab.spawn("2", runId);
      expect((await second.exit).code, second.output()).toBe(0);

      const run = await lab.client.get(runId);
      expect(run.status).toBe("completed");
      expect(run.result).toMatchObject({ status: "answered", turns: 3, answer: expect.stringContaining("I have refunded 129.5 for order 8472") });
      expect(lab.refunds(), "refunds in the provider's ledger").toMatchObject([{ chargeId: "ch_8472_1", idempotencyKey: `${runId}/tool.issue_refund` }]);

      // Each step's body ran once, except the one killed inside its body: twice (the gap).
      const inGap = crashAt.startsWith("body:") ? crashAt.slice("body:".length) : undefined;
      const executions = lab.executions();
      for (const stepId of STEPS) expect(executions.filter((s) => s === stepId).length, stepId).toBe(stepId === inGap ? 2 : 1);
      // The provider saw each turn once, the killed-in-the-gap turn twice.
      const turns = [1, 2, 3].flatMap((t) => (inGap !== undefined && TURN[inGap] === t ? [t, t] : [t]));
      expect(lab.modelCalls().map((c) => c.turn)).toEqual(turns);
      // The restarted worker replayed everything recorded before the kill.
      const replayed = new Set(lab.events("2").filter((e) => e.outcome === "replayed").map((e) => e.stepId));
      const recorded = lab.events("1").filter((e) => e.outcome === "completed").map((e) => e.stepId);
      for (const stepId of recorded) expect(replayed.has(stepId), `${stepId} replayed`).toBe(true);
    } finally {
      await lab.dispose();
    }
  });
});
