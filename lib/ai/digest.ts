/**
 * The digest of a model request, journaled beside its response: enough to tell on replay whether
 * the code now asks the model something else, and to say what changed, without keeping the
 * request itself (the conversation is already in the journal, turn by turn).
 */
import { createHash } from "node:crypto";
import type { LanguageModelV3CallOptions } from "@ai-sdk/provider";

/** The digest of a model call's request kept with its answer, to tell on replay what changed. */
export interface RequestDigest {
  /** `provider:modelId`, in clear. */
  model: string;
  /** Hash of the call settings (temperature, max tokens, tool choice, response format, provider options, …). */
  settings: string;
  /** `role:hash` of each prompt message, in order. */
  messages: string[];
  /** Hash of each tool's definition (description and input schema), by tool name. */
  tools: Record<string, string>;
}

export function digestRequest(model: { provider: string; modelId: string }, params: LanguageModelV3CallOptions): RequestDigest {
  const { prompt, tools, abortSignal: _signal, headers: _headers, includeRawChunks: _raw, ...settings } = params;
  return {
    model: `${model.provider}:${model.modelId}`,
    settings: hash(settings),
    messages: prompt.map((message) => `${message.role}:${hash(message)}`),
    tools: Object.fromEntries((tools ?? []).map((tool) => [tool.name, hash(tool)])),
  };
}

/** What differs between the recorded request and the live one, as short phrases; empty when nothing does. */
export function diffRequests(recorded: RequestDigest, live: RequestDigest): string[] {
  const changes: string[] = [];
  if (recorded.model !== live.model) changes.push(`the model (${recorded.model} → ${live.model})`);
  if (recorded.settings !== live.settings) changes.push("the call settings");
  const count = Math.max(recorded.messages.length, live.messages.length);
  for (let i = 0; i < count; i++) {
    const before = recorded.messages[i];
    const after = live.messages[i];
    if (before === after) continue;
    if (before === undefined) changes.push(`message ${i} (${roleOf(after)}) added`);
    else if (after === undefined) changes.push(`message ${i} (${roleOf(before)}) removed`);
    else changes.push(`message ${i} (${roleOf(after)})`);
  }
  const names = new Set([...Object.keys(recorded.tools), ...Object.keys(live.tools)]);
  for (const name of [...names].sort()) {
    const before = recorded.tools[name];
    const after = live.tools[name];
    if (before === after) continue;
    changes.push(before === undefined ? `tool ${name} added` : after === undefined ? `tool ${name} removed` : `tool ${name}'s definition`);
  }
  return changes;
}

function roleOf(entry: string | undefined): string {
  return entry?.split(":")[0] ?? "?";
}

function hash(value: unknown): string {
  return createHash("sha256").update(canonical(value)).digest("base64url").slice(0, 16);
}

/** JSON with sorted keys; bytes (a file part's data) as base64, not as an object of indices. */
function canonical(value: unknown): string {
  return (
    JSON.stringify(value, (_key, v: unknown) => {
      if (v instanceof Uint8Array) return Buffer.from(v).toString("base64");
      if (v === null || typeof v !== "object" || Array.isArray(v)) return v;
      const sorted: Record<string, unknown> = {};
      for (const k of Object.keys(v).sort()) sorted[k] = (v as Record<string, unknown>)[k];
      return sorted;
    }) ?? "null"
  );
}
