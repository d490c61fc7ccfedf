import { join } from "node:path";
import type { LanguageModelV3, LanguageModelV3CallOptions, LanguageModelV3Content, LanguageModelV3GenerateResult, LanguageModelV3Prompt, LanguageModelV3StreamPart } from "@ai-sdk/provider";
import { convertArrayToReadableStream, MockLanguageModelV3 } from "ai/test";
import { JsonLinesFile } from "./ledger-file.ts";

export interface ModelCall {
  turn: number;
  messages: number;
  at: string;
}

/**
 * The provider stand-in for the refund agent: the AI SDK's own mock model (`ai/test`), so no
 * network or key is needed, with a deterministic support agent's policy behind it. It reads the
 * conversation and decides the next tool call or the final answer; each call is logged to a file,
 * so a test can count how often the "provider" was really asked, across processes.
 *
 * Its policy: find the order id in the customer's message → `lookup_order` → if the customer
 * wants their money back and the order is found → `issue_refund` → answer with the outcome.
 *
 * Swap it for a real provider in one line: `openai("gpt-4.1")` or `bedrock("…")` (see docs/guides/agents.md).
 */
export function supportModel(dir: string): LanguageModelV3 {
  const log = new JsonLinesFile<ModelCall>(join(dir, "model-calls.jsonl"));
  const answer = (options: LanguageModelV3CallOptions): LanguageModelV3GenerateResult => {
    const turn = options.prompt.filter((m) => m.role === "assistant").length + 1;
    log.append({ turn, messages: options.prompt.length, at: new Date().toISOString() });
    const content = decide(options, turn);
    const calls = content.some((c) => c.type === "tool-call");
    return {
      content,
      finishReason: { unified: calls ? "tool-calls" : "stop", raw: calls ? "tool_calls" : "stop" },
      usage: { inputTokens: { total: 40 * options.prompt.length, noCache: undefined, cacheRead: undefined, cacheWrite: undefined }, outputTokens: { total: 20, text: 20, reasoning: undefined } },
      response: { id: `resp_${turn}`, modelId: "support-policy-1", timestamp: new Date() },
      warnings: [],
    };
  };
  return new MockLanguageModelV3({
    provider: "waymark-demo",
    modelId: "support-policy-1",
    doGenerate: async (options) => answer(options),
    doStream: async (options) => ({ stream: convertArrayToReadableStream(toParts(answer(options))) }),
  });
}

/** Every call the model received, oldest first. */
export function supportModelCalls(dir: string): ModelCall[] {
  return new JsonLinesFile<ModelCall>(join(dir, "model-calls.jsonl")).read();
}

function decide(options: LanguageModelV3CallOptions, turn: number): LanguageModelV3Content[] {
  const { prompt } = options;
  const say = (text: string): LanguageModelV3Content[] => [{ type: "text", text }];
  const call = (toolName: string, args: Record<string, unknown>): LanguageModelV3Content[] => {
    if (!options.tools?.some((t) => t.name === toolName)) return say(`I cannot ${toolName.replace(/_/g, " ")} here; a colleague will follow up.`);
    return [{ type: "tool-call", toolCallId: `call_${turn}`, toolName, input: JSON.stringify(args) }];
  };

  const question = lastUserText(prompt);
  const orderId = /order\s*#?\s*([A-Za-z0-9-]+)/i.exec(question)?.[1];
  if (orderId === undefined) return say("Which order is this about? Please send me its number.");

  const lookup = toolResult(prompt, "lookup_order");
  if (lookup === undefined) return call("lookup_order", { orderId });
  if (!lookup.found) return say(`I could not find order ${orderId}. Please check the number.`);

  const wantsRefund = /refund|money back|broken|damaged|return/i.test(question);
  if (!wantsRefund) return say(`Order ${orderId} (${String(lookup.item)}) is ${String(lookup.status)}.`);

  const refund = toolResult(prompt, "issue_refund");
  if (refund === undefined) return call("issue_refund", { orderId, chargeId: lookup.chargeId, amount: lookup.amount, reason: question.slice(0, 200) });
  if (refund.refunded) return say(`I have refunded ${String(refund.amount)} for order ${orderId} (refund ${String(refund.refundId)}). Sorry about the trouble!`);
  return say(`I could not refund order ${orderId}: ${String(refund.reason)}. A colleague will be in touch.`);
}

function lastUserText(prompt: LanguageModelV3Prompt): string {
  const user = [...prompt].reverse().find((m) => m.role === "user");
  if (user?.role !== "user") return "";
  return user.content.map((p) => (p.type === "text" ? p.text : "")).join(" ");
}

/** The latest result of a tool in the conversation, as JSON (an error result reads as `{ error }`). */
function toolResult(prompt: LanguageModelV3Prompt, name: string): Record<string, unknown> | undefined {
  for (const message of [...prompt].reverse()) {
    if (message.role !== "tool") continue;
    for (const part of message.content) {
      if (part.type !== "tool-result" || part.toolName !== name) continue;
      const out = part.output;
      if (out.type === "json" && typeof out.value === "object" && out.value !== null && !Array.isArray(out.value)) return out.value as Record<string, unknown>;
      return { error: "value" in out ? String(out.value) : out.type };
    }
  }
  return undefined;
}

/** The same answer as a stream, for `streamText`. */
function toParts(result: LanguageModelV3GenerateResult): LanguageModelV3StreamPart[] {
  const parts: LanguageModelV3StreamPart[] = [{ type: "stream-start", warnings: [] }, { type: "response-metadata", ...result.response }];
  for (const [i, c] of result.content.entries()) {
    if (c.type === "text") parts.push({ type: "text-start", id: `t${i}` }, { type: "text-delta", id: `t${i}`, delta: c.text }, { type: "text-end", id: `t${i}` });
    else if (c.type === "tool-call") parts.push(c);
  }
  parts.push({ type: "finish", usage: result.usage, finishReason: result.finishReason });
  return parts;
}
