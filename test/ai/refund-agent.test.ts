/**
 * The AI SDK refund agent (functions/refund-agent.ts) on the test runtime: in-memory journal,
 * virtual clock, so its 48 h approval wait passes in milliseconds. The model is the AI SDK's mock
 * (`ai/test`) behind a scripted policy — the provider stand-in — and every other part is real:
 * `generateText`'s loop, the durable wrapper, the engine, the approval link.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { createTestRuntime } from "waymark/testing";
import { refundAgent, type SupportTicket } from "../../functions/refund-agent.ts";
import { FakeRefunds } from "../../functions/services/refunds.ts";
import { FakeShop } from "../../functions/services/shop.ts";
import { supportModelCalls } from "../../functions/services/support-model.ts";

const ticket: SupportTicket = { ticketId: "T-1", customerEmail: "kim@example.com", message: "The lamp from order 8472 arrived broken. Can I get a refund?", approverEmail: "ana@shop.test" };
const webhook = { secret: "test-webhook-secret-0123456789abcdef", baseUrl: "https://agent.example" };
let dir: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "waymark-ai-agent-"));
  process.env.WAYMARK_DEMO_DIR = dir;
});

describe("the AI SDK refund agent on the test runtime", () => {
  it("looks the order up, asks a human through a signed link, and refunds once after approval; no model turn is asked twice", async () => {
    const rt = createTestRuntime({ workflows: [refundAgent], webhook });
    await rt.start(refundAgent, { runId: "ticket-1", input: ticket });
    expect(await rt.get("ticket-1")).toMatchObject({ status: "suspended", waitingFor: "signal:refund_approval" });
    expect(new FakeRefunds(dir).refunds()).toEqual([]);

    // The link went out through the workflow's notify, once, bound to the wait.
    const mails = new FakeShop(dir).approvalMails();
    expect(mails).toHaveLength(1);
    expect(mails[0]).toMatchObject({ to: "ana@shop.test", orderId: "8472", key: "ticket-1/refund_approval:notify" });
    expect(mails[0]?.url).toMatch(/^https:\/\/agent\.example\/approvals\/\S+$/);

    await rt.signal("ticket-1", "refund_approval", { approved: true, approver: "ana@shop.test" });
    const run = await rt.get("ticket-1");
    expect(run.status).toBe("completed");
    expect(run.result).toEqual({ status: "answered", ticketId: "T-1", turns: 3, answer: expect.stringContaining("I have refunded 129.5 for order 8472") });
    expect(new FakeRefunds(dir).refunds()).toMatchObject([{ chargeId: "ch_8472_1", amount: 129.5, idempotencyKey: "ticket-1/tool.issue_refund" }]);
    // Two invocations (before and after the approval); the second replayed turns 1 and 2 from the journal.
    expect(supportModelCalls(dir).map((c) => c.turn)).toEqual([1, 2, 3]);
    const replayed = rt.events.filter((e) => e.outcome === "replayed").map((e) => e.stepId);
    expect(replayed).toEqual(expect.arrayContaining(["model", "tool.lookup_order", "model#2"]));
    expect(new FakeShop(dir).approvalMails()).toHaveLength(1);
  });

  it("nobody approves within 48 hours: the model is told, the agent answers, and no refund is made", async () => {
    const rt = createTestRuntime({ workflows: [refundAgent], webhook });
    await rt.start(refundAgent, { runId: "ticket-2", input: ticket });
    await rt.advance("47h");
    expect((await rt.get("ticket-2")).status).toBe("suspended");
    await rt.advance("1h");
    const run = await rt.get("ticket-2");
    expect(run.result).toMatchObject({ status: "answered", answer: expect.stringContaining("nobody approved this call within 48h; it was not run") });
    expect(new FakeRefunds(dir).refunds()).toEqual([]);
  });

  it("a declined refund: the model gets a tool result saying who declined and why", async () => {
    const rt = createTestRuntime({ workflows: [refundAgent], webhook });
    await rt.start(refundAgent, { runId: "ticket-3", input: ticket });
    await rt.signal("ticket-3", "refund_approval", { approved: false, approver: "ana@shop.test", note: "outside the return window" });
    expect((await rt.get("ticket-3")).result).toMatchObject({ answer: expect.stringContaining("ana@shop.test declined it (outside the return window)") });
    expect(new FakeRefunds(dir).refunds()).toEqual([]);
    expect(rt.events.some((e) => e.stepId === "tool.issue_refund")).toBe(false);
  });
});
