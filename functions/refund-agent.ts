/**
 * A durable support agent, written with the Vercel AI SDK: `generateText` runs the tool-calling
 * loop, and `waymark/ai` makes every model call and every tool call a journaled step. A process
 * that dies mid-conversation resumes without asking the model again (no second bill, no different
 * answer), and a refund — the one tool with money behind it — waits for a human's approval first
 * and runs at most once. Written only against the public API, as a user would.
 *
 * The model is the AI SDK's own mock (`ai/test`) with a scripted policy, so no network or key is
 * needed; `supportModel(dir())` is the one line to change for a real provider (see docs/guides/agents.md).
 */
import { generateText, stepCountIs, tool } from "ai";
import { z } from "zod";
import { durable } from "waymark";
import { durableModel, durableTools, toolContext } from "waymark/ai";
import { lookupOrder } from "./services/orders.ts";
import { FakeRefunds } from "./services/refunds.ts";
import { FakeShop } from "./services/shop.ts";
import { supportModel } from "./services/support-model.ts";

export const SupportTicket = z.object({
  ticketId: z.string().min(1),
  customerEmail: z.string().email(),
  message: z.string().min(1).max(4000),
  /** Who approves refunds: they are emailed an approval link (needs a webhook secret). */
  approverEmail: z.string().email().optional(),
});
export type SupportTicket = z.infer<typeof SupportTicket>;

export const RefundApproval = z.object({ approved: z.boolean(), approver: z.string().min(1), note: z.string().max(500).optional() });

const SYSTEM = "You are the shop's support agent. Look orders up before answering; refund only what the customer paid.";
/** A conversation that has not ended after this many model turns is handed to a human. */
const MAX_TURNS = 6;

// The fakes keep their state in files under this folder (created on first use).
const dir = () => process.env.WAYMARK_DEMO_DIR ?? ".waymark/demo";

/** The agent's tools, plain AI SDK tools: nothing durable about them. */
const tools = {
  lookup_order: tool({
    description: "Find an order by its id: item, amount, charge id, status.",
    inputSchema: z.object({ orderId: z.string().min(1) }),
    execute: ({ orderId }) => {
      const order = lookupOrder(orderId);
      return order ? { found: true, ...order } : { found: false, orderId };
    },
  }),
  issue_refund: tool({
    description: "Refund a charge. A human approves every refund first.",
    inputSchema: z.object({ orderId: z.string().min(1), chargeId: z.string().min(1), amount: z.number().positive(), reason: z.string().optional() }),
    needsApproval: true,
    execute: ({ chargeId, amount }, options) => {
      // The key is the same on every retry and replay of this call: the provider deduplicates on it.
      const context = toolContext(options);
      if (!context) throw new Error("issue_refund runs only inside the durable agent");
      const refund = new FakeRefunds(dir()).refund(chargeId, amount, { idempotencyKey: context.idempotencyKey });
      return { refunded: true, refundId: refund.refundId, amount: refund.amount, approvedBy: context.approval?.approver ?? null };
    },
  }),
};

/**
 * The agent: answers a support ticket, refunding (after approval) when the customer asks.
 *
 * @example
 * ```ts
 * const ticket = client.handle(refundAgent, "ticket-1");
 * await ticket.start({ ticketId: "T-1", customerEmail: "kim@example.com",
 *   message: "The lamp from order 8472 arrived broken. Can I get a refund?" });
 * // … the run waits for "refund_approval"; a supervisor decides:
 * await ticket.signal("refund_approval", { approved: true, approver: "ana@shop" });
 * ```
 */
export const refundAgent = durable(
  { name: "refund-agent", input: SupportTicket, signals: { refund_approval: RefundApproval } },
  async (ticket, step) => {
    const approverEmail = ticket.approverEmail;
    const result = await generateText({
      model: durableModel(step, supportModel(dir()), { retries: 3, timeout: "60s" }),
      tools: durableTools(step, tools, {
        approval: {
          signal: "refund_approval",
          timeout: "48h",
          ...(approverEmail === undefined
            ? {}
            : { notify: (link, call) => new FakeShop(dir()).sendApprovalRequest(approverEmail, String((call.input as { orderId: string }).orderId), link, `${link.runId}/${link.waitId}:notify`) }),
        },
        tools: { issue_refund: { retries: 5, timeout: "30s" } },
      }),
      system: SYSTEM,
      prompt: ticket.message,
      stopWhen: stepCountIs(MAX_TURNS),
      maxRetries: 0, // Waymark retries each model call as a step; the SDK need not retry too
    });
    const turns = result.steps.length;
    if (result.finishReason === "tool-calls") return { status: "escalated" as const, ticketId: ticket.ticketId, answer: "A colleague will take over this conversation.", turns };
    return { status: "answered" as const, ticketId: ticket.ticketId, answer: result.text, turns };
  },
);
