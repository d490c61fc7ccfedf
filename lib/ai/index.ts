/**
 * `waymark/ai`: a Vercel AI SDK agent made durable with a few lines. The model's calls and the
 * tools' calls become journaled steps, so an agent killed mid-conversation resumes without asking
 * the model again or repeating a tool, and a risky tool waits for a human's signed approval
 * without holding any compute. Needs the optional peers `ai` (6.x) and `@ai-sdk/provider` (3.x).
 *
 * @example
 * ```ts
 * import { generateText, stepCountIs } from "ai";
 * import { durable } from "waymark";
 * import { durableModel, durableTools, toolApproval } from "waymark/ai";
 *
 * export const agent = durable({ name: "agent", input: Ticket, signals: { refund_approval: toolApproval } }, async (ticket, step) => {
 *   const { text } = await generateText({
 *     model: durableModel(step, openai("gpt-4.1")),
 *     tools: durableTools(step, { lookupOrder, issueRefund }, { tools: { issueRefund: { approval: { signal: "refund_approval", timeout: "48h" } } } }),
 *     stopWhen: stepCountIs(8),
 *     prompt: ticket.message,
 *   });
 *   return { answer: text };
 * });
 * ```
 */
export { durableModel, durableMiddleware, type DurableModelOptions, type ModelRequestChange } from "./model.ts";
export { durableTools, toolContext, type DurableToolContext, type DurableToolOptions, type DurableToolsOptions } from "./tools.ts";
export { toolApproval, type ApprovalDecision, type ApprovalSignal, type ToolApprovalOptions, type ToolApprovalRequest, type ToolApproved, type ToolNotApproved } from "./approval.ts";
export { ModelCallError, ModelStreamError } from "./errors.ts";
export type { RequestDigest } from "./digest.ts";
