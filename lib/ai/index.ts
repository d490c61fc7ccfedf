/**
 * `waymark/ai`: a Vercel AI SDK agent made durable with a few lines. The model's calls and the
 * tools' calls become journaled steps, so an agent killed mid-conversation resumes without asking
 * the model again or repeating a tool, and a risky tool waits for a human's signed approval
 * without holding any compute. Needs the optional peer `ai` (6.x, or 7.x on Node 22+; its
 * `@ai-sdk/provider` 3.x or 4.x gives the types): without it, importing this module throws
 * `MissingDependencyError` naming it.
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
// First, so that a missing `ai` is reported before anything else is evaluated.
import "./peers.ts";

export { durableModel, durableMiddleware, type DurableModelOptions, type LanguageModelLike, type ModelRequestChange } from "./model.ts";
export { durableTools, toolContext, type DurableToolContext, type DurableToolOptions, type DurableToolsOptions, type ToolCallOptions } from "./tools.ts";
export { toolApproval, type ApprovalDecision, type ApprovalSignal, type ToolApprovalOptions, type ToolApprovalRequest, type ToolApproved, type ToolNotApproved } from "./approval.ts";
export { ModelCallError, ModelStreamError } from "./errors.ts";
export type { RequestDigest } from "./digest.ts";
