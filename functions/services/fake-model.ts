import { join } from "node:path";
import { JsonLinesFile } from "./ledger-file.ts";

/** A chat message, shaped like the common chat-completions APIs. Plain JSON: it is journaled. */
export type ChatMessage =
  | { role: "system" | "user"; content: string }
  | { role: "assistant"; content: string; toolCalls: ToolCall[] }
  | { role: "tool"; toolCallId: string; name: string; content: string };

export interface ToolCall {
  id: string;
  name: string;
  /** The model's arguments: untrusted, the caller validates them. */
  arguments: Record<string, unknown>;
}

/** A tool the model may call, as a model API describes it. */
export interface ToolSpec {
  name: string;
  description: string;
}

export interface ModelCall {
  turn: number;
  messages: number;
  key: string;
  at: string;
}

/**
 * A deterministic stand-in for a language model (no network): it reads the conversation and
 * decides the next tool call or the final answer the way a support agent model would. Each call
 * is logged to a file, so a test can count how often the "model" was really asked.
 *
 * Its policy: find the order id in the customer's message → `lookup_order` → if the customer
 * wants their money back and the order is found → `issue_refund` → answer with the outcome.
 */
export class FakeSupportModel {
  private readonly log: JsonLinesFile<ModelCall>;

  constructor(dir: string) {
    this.log = new JsonLinesFile(join(dir, "model-calls.jsonl"));
  }

  complete(request: { messages: readonly ChatMessage[]; tools: readonly ToolSpec[]; key: string }): { message: ChatMessage & { role: "assistant" } } {
    const { messages } = request;
    const turn = messages.filter((m) => m.role === "assistant").length + 1;
    this.log.append({ turn, messages: messages.length, key: request.key, at: new Date().toISOString() });
    const say = (content: string) => ({ message: { role: "assistant" as const, content, toolCalls: [] } });
    const call = (name: string, args: Record<string, unknown>) => {
      if (!request.tools.some((t) => t.name === name)) return say(`I cannot ${name.replace(/_/g, " ")} here; a colleague will follow up.`);
      return { message: { role: "assistant" as const, content: "", toolCalls: [{ id: `call_${turn}`, name, arguments: args }] } };
    };

    const question = [...messages].reverse().find((m) => m.role === "user")?.content ?? "";
    const orderId = /order\s*#?\s*([A-Za-z0-9-]+)/i.exec(question)?.[1];
    if (orderId === undefined) return say("Which order is this about? Please send me its number.");

    const lookup = toolResult(messages, "lookup_order");
    if (lookup === undefined) return call("lookup_order", { orderId });
    if (!lookup.found) return say(`I could not find order ${orderId}. Please check the number.`);

    const wantsRefund = /refund|money back|broken|damaged|return/i.test(question);
    if (!wantsRefund) return say(`Order ${orderId} (${String(lookup.item)}) is ${String(lookup.status)}.`);

    const refund = toolResult(messages, "issue_refund");
    if (refund === undefined) {
      return call("issue_refund", { orderId, chargeId: lookup.chargeId, amount: lookup.amount, reason: question.slice(0, 200) });
    }
    if (refund.refunded) return say(`I have refunded ${String(refund.amount)} for order ${orderId} (refund ${String(refund.refundId)}). Sorry about the trouble!`);
    return say(`I could not refund order ${orderId}: ${String(refund.reason)}. A colleague will be in touch.`);
  }

  /** Every call the model received, oldest first. */
  calls(): ModelCall[] {
    return this.log.read();
  }
}

/** The latest result of a tool in the conversation, parsed. */
function toolResult(messages: readonly ChatMessage[], name: string): Record<string, unknown> | undefined {
  const last = [...messages].reverse().find((m) => m.role === "tool" && m.name === name);
  return last && last.role === "tool" ? (JSON.parse(last.content) as Record<string, unknown>) : undefined;
}
