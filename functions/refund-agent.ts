/**
 * A durable support agent: a tool-calling loop in which every model call and every tool call is
 * a step. The model's replies are journaled, so a process that dies mid-conversation resumes
 * without asking the model again (no second bill, no different answer), and a refund — the one
 * tool with money behind it — waits for a human's approval first and runs at most once.
 * Written only against the public API, as a user would.
 */
import { z } from "zod";
import { durable, type Step } from "waymark";
import { type ChatMessage, FakeSupportModel, type ToolCall, type ToolSpec } from "./services/fake-model.ts";
import { lookupOrder } from "./services/orders.ts";
import { FakeRefunds } from "./services/refunds.ts";
import { FakeShop } from "./services/shop.ts";

export const SupportTicket = z.object({
  ticketId: z.string().min(1),
  customerEmail: z.string().email(),
  message: z.string().min(1).max(4000),
  /** Who approves refunds: they are emailed an approval link (needs a webhook secret). */
  approverEmail: z.string().email().optional(),
});
export type SupportTicket = z.infer<typeof SupportTicket>;

export const RefundApproval = z.object({ approved: z.boolean(), approver: z.string().min(1), note: z.string().max(500).optional() });

const RefundArgs = z.object({ orderId: z.string().min(1), chargeId: z.string().min(1), amount: z.number().positive() });
const LookupArgs = z.object({ orderId: z.string().min(1) });

const TOOLS: ToolSpec[] = [
  { name: "lookup_order", description: "Find an order by its id: item, amount, charge id, status." },
  { name: "issue_refund", description: "Refund a charge. A human approves every refund first." },
];
const SYSTEM = "You are the shop's support agent. Look orders up before answering; refund only what the customer paid.";
/** A conversation that has not ended after this many model turns is handed to a human. */
const MAX_TURNS = 6;

// The fakes keep their state in files under this folder (created on first use).
const dir = () => process.env.WAYMARK_DEMO_DIR ?? ".waymark/demo";

type Signals = { refund_approval: typeof RefundApproval };

/**
 * The agent: answers a support ticket, refunding (after approval) when the customer asks.
 *
 * @example
 * ```ts
 * await client.start(refundAgent, { runId: "ticket-1", input: { ticketId: "T-1", customerEmail: "kim@example.com",
 *   message: "The lamp from order 8472 arrived broken. Can I get a refund?" } });
 * // … the run waits for "refund_approval"; a supervisor decides:
 * await client.signal("ticket-1", "refund_approval", { approved: true, approver: "ana@shop" });
 * ```
 */
export const refundAgent = durable(
  { name: "refund-agent", input: SupportTicket, signals: { refund_approval: RefundApproval } },
  async (ticket, step) => {
    const messages: ChatMessage[] = [
      { role: "system", content: SYSTEM },
      { role: "user", content: ticket.message },
    ];
    for (let turn = 1; turn <= MAX_TURNS; turn++) {
      // The model call is a step: on replay its reply comes from the journal, not the model.
      const reply = await step.run("model", ({ idempotencyKey }) => new FakeSupportModel(dir()).complete({ messages, tools: TOOLS, key: idempotencyKey }), {
        retries: 3,
        timeout: "60s",
      });
      messages.push(reply.message);
      if (reply.message.toolCalls.length === 0) return { status: "answered" as const, ticketId: ticket.ticketId, answer: reply.message.content, turns: turn };
      for (const call of reply.message.toolCalls) {
        const result = await runTool(step, ticket, call);
        messages.push({ role: "tool", toolCallId: call.id, name: call.name, content: JSON.stringify(result) });
      }
    }
    return { status: "escalated" as const, ticketId: ticket.ticketId, answer: "A colleague will take over this conversation.", turns: MAX_TURNS };
  },
);

/** Runs one tool call as a step; the model's arguments are checked first (they are untrusted). */
async function runTool(step: Step<Signals>, ticket: SupportTicket, call: ToolCall): Promise<Record<string, unknown>> {
  switch (call.name) {
    case "lookup_order": {
      const args = LookupArgs.safeParse(call.arguments);
      if (!args.success) return { error: "lookup_order needs { orderId }" };
      return step.run("tool.lookup_order", () => {
        const order = lookupOrder(args.data.orderId);
        return order ? { found: true, ...order } : { found: false, orderId: args.data.orderId };
      });
    }
    case "issue_refund": {
      const args = RefundArgs.safeParse(call.arguments);
      if (!args.success) return { refunded: false, reason: "the refund request was malformed" };
      const { orderId, chargeId, amount } = args.data;
      const approverEmail = ticket.approverEmail;
      const approval = await step.waitForSignal("refund_approval", {
        timeout: "48h",
        ...(approverEmail === undefined
          ? {}
          : { notify: (link) => new FakeShop(dir()).sendApprovalRequest(approverEmail, orderId, link, `${link.runId}/${link.waitId}:notify`) }),
      });
      if (!approval.received) return { refunded: false, reason: "nobody approved it within 48 hours" };
      if (!approval.payload.approved) return { refunded: false, reason: `${approval.payload.approver} declined it${approval.payload.note ? ` (${approval.payload.note})` : ""}` };
      const refund = await step.run("tool.issue_refund", ({ idempotencyKey }) => new FakeRefunds(dir()).refund(chargeId, amount, { idempotencyKey }));
      return { refunded: true, refundId: refund.refundId, amount: refund.amount, approvedBy: approval.payload.approver };
    }
    default:
      return { error: `no tool named ${call.name}` };
  }
}
