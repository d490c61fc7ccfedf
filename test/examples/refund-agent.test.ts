/**
 * The durable agent (functions/refund-agent.ts) end to end on the local runtime, in real worker
 * processes killed with SIGKILL: the refund waits for a human, runs once, and the model is never
 * asked twice for a turn the journal already holds.
 */
import { describe, it } from "vitest";
import type { SupportTicket } from "../../functions/refund-agent.ts";
import { AgentLab } from "./agent-lab.ts";
import { until } from "../support/until.ts";

const ticket: SupportTicket = { ticketId: "T-1", customerEmail: "kim@example.com", message: "The lamp from order 8472 arrived broken. Can I get a refund?" };
const approve = { approved: true, approver: "ana@shop" };

async function withLab(body: (lab: AgentLab) => Promise<void>): Promise<void> {
  const lab = new AgentLab();
  try {
    await body(lab);
  } finally {
    await lab.dispose();
  }
}

describe.concurrent("the refund agent on the local runtime, across SIGKILL", () => {
  it("waits for approval before refunding; a worker killed while it waits is replaced, and the refund runs once", async ({ expect }) => {
    await withLab(async (lab) => {
      await lab.client.start("refund-agent", { runId: "ticket-1", input: ticket });
      const first = lab.spawn("1", "ticket-1");
      await until("the agent to wait for refund approval", async () => (await lab.client.get("ticket-1")).waitingFor === "signal:refund_approval");

      // Two model turns (look the order up, then ask to refund) and no refund yet.
      expect(lab.modelCalls().map((c) => c.turn)).toEqual([1, 2]);
      expect(lab.refunds()).toEqual([]);
      first.child.kill("SIGKILL");
      expect((await first.exit).signal).toBe("SIGKILL");

      await lab.client.signal("ticket-1", "refund_approval", approve, { signalId: "approval-ana-1" });
      const second = lab.spawn("2", "ticket-1");
      expect((await second.exit).code, second.output()).toBe(0);

      const run = await lab.client.get("ticket-1");
      expect(run.status).toBe("completed");
      expect(run.result).toMatchObject({ status: "answered", turns: 3, answer: expect.stringContaining("I have refunded 129.5 for order 8472") });
      expect(lab.refunds()).toMatchObject([{ chargeId: "ch_8472_1", amount: 129.5, idempotencyKey: "ticket-1/tool.issue_refund" }]);
      // Worker 2 took the first two model turns and the lookup from the journal; only turn 3 is new.
      expect(lab.modelCalls().map((c) => c.turn)).toEqual([1, 2, 3]);
      const replayed = lab.events("2").filter((e) => e.outcome === "replayed").map((e) => e.stepId);
      expect(replayed).toEqual(expect.arrayContaining(["model", "tool.lookup_order", "model#2"]));
    });
  });

  it("a worker killed right after the refund is recorded: the restart takes the refund from the journal", async ({ expect }) => {
    await withLab(async (lab) => {
      await lab.client.start("refund-agent", { runId: "ticket-2", input: ticket });
      await lab.client.signal("ticket-2", "refund_approval", approve, { signalId: "approval-early" }); // buffered before the wait
      const first = lab.spawn("1", "ticket-2", "completed:tool.issue_refund");
      expect((await first.exit).signal, first.output()).toBe("SIGKILL");
      expect(lab.refunds()).toHaveLength(1);

      const second = lab.spawn("2", "ticket-2");
      expect((await second.exit).code, second.output()).toBe(0);
      expect((await lab.client.get("ticket-2")).result).toMatchObject({ status: "answered", answer: expect.stringContaining("I have refunded") });
      expect(lab.refunds(), "refunds in the provider's ledger").toHaveLength(1);
      expect(lab.events("2").filter((e) => e.stepId === "tool.issue_refund").map((e) => e.outcome)).toEqual(["replayed"]);
      expect(lab.modelCalls().map((c) => c.turn)).toEqual([1, 2, 3]);
    });
  });

  it("a declined refund never runs: the agent tells the customer", async ({ expect }) => {
    await withLab(async (lab) => {
      await lab.client.start("refund-agent", { runId: "ticket-3", input: ticket });
      const worker = lab.spawn("1", "ticket-3");
      await until("the agent to wait for refund approval", async () => (await lab.client.get("ticket-3")).waitingFor === "signal:refund_approval");
      await lab.client.signal("ticket-3", "refund_approval", { approved: false, approver: "ana@shop", note: "outside the return window" });
      expect((await worker.exit).code, worker.output()).toBe(0);
      expect((await lab.client.get("ticket-3")).result).toMatchObject({ answer: expect.stringContaining("ana@shop declined it (outside the return window)") });
      expect(lab.refunds()).toEqual([]);
    });
  });

  it("a question that needs no refund is answered without waiting for anyone", async ({ expect }) => {
    await withLab(async (lab) => {
      await lab.client.start("refund-agent", { runId: "ticket-4", input: { ...ticket, message: "Where is order 8473?" } });
      const worker = lab.spawn("1", "ticket-4");
      expect((await worker.exit).code, worker.output()).toBe(0);
      expect((await lab.client.get("ticket-4")).result).toMatchObject({ status: "answered", turns: 2, answer: "Order 8473 (MUG-07 mug, set of 4) is processing." });
      expect(lab.events().some((e) => e.stepId.startsWith("refund_approval"))).toBe(false);
    });
  });
});
