/**
 * A model response as the journal keeps it, and back. The journal takes JSON only, so the few
 * non-JSON values of the AI SDK's model interface are converted both ways: `Date` timestamps
 * become ISO strings, generated files' bytes become base64. Raw HTTP bodies (`request.body`,
 * `response.body`) are not kept: they repeat the content at several times its size.
 *
 * Both versions of the interface are kept as they come (the journal holds what the model
 * answered): version 3 (ai 6) puts a file's bytes in `data`, version 4 (ai 7) in
 * `data: { type: "data", data }`, or a `URL` in `data: { type: "url", url }`.
 *
 * A response is always read back through {@link decodeGenerate} / {@link decodeStream}, live and on
 * replay alike, so a live run and its replay hand the SDK the very same value.
 */
import type { LanguageModelV3GenerateResult, LanguageModelV3StreamPart, LanguageModelV3StreamResult } from "@ai-sdk/provider";
import { ModelStreamError } from "./errors.ts";

/** A JSON value, as the journal stores it. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** `doGenerate`'s result, JSON-safe. */
export type RecordedGenerate = Json;
/** `doStream`'s parts, collected, JSON-safe, plus the response headers. */
export interface RecordedStream {
  parts: Json[];
  headers?: Record<string, string>;
}

export function encodeGenerate(result: LanguageModelV3GenerateResult): RecordedGenerate {
  const { request: _request, response, content, ...rest } = result;
  const kept = response === undefined ? undefined : { id: response.id, modelId: response.modelId, timestamp: response.timestamp?.toISOString(), headers: response.headers };
  return toJson({ ...rest, content: content.map(withBase64Data), ...(kept === undefined ? {} : { response: kept }) });
}

export function decodeGenerate(recorded: RecordedGenerate): LanguageModelV3GenerateResult {
  const result = structuredClone(recorded) as unknown as LanguageModelV3GenerateResult & { response?: { timestamp?: unknown } };
  const stamp = result.response?.timestamp;
  if (result.response && typeof stamp === "string") result.response.timestamp = new Date(stamp);
  for (const part of result.content) withUrlData(part);
  return result;
}

/** Reads the provider's whole stream. An error part fails the attempt rather than being journaled as the answer. */
export async function collectStream(result: LanguageModelV3StreamResult): Promise<RecordedStream> {
  const parts: Json[] = [];
  const reader = result.stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (value.type === "error") throw new ModelStreamError(describe(value.error));
    parts.push(encodePart(value));
  }
  const headers = result.response?.headers;
  return headers === undefined ? { parts } : { parts, headers };
}

export function decodeStream(recorded: RecordedStream): LanguageModelV3StreamResult {
  const parts = structuredClone(recorded.parts) as unknown as Array<LanguageModelV3StreamPart & { timestamp?: unknown }>;
  for (const part of parts) {
    if (part.type === "response-metadata" && typeof part.timestamp === "string") part.timestamp = new Date(part.timestamp);
    withUrlData(part);
  }
  let next = 0;
  const stream = new ReadableStream<LanguageModelV3StreamPart>({
    pull(controller) {
      const part = parts[next++];
      if (part === undefined) controller.close();
      else controller.enqueue(part);
    },
  });
  return recorded.headers === undefined ? { stream } : { stream, response: { headers: recorded.headers } };
}

function encodePart(part: LanguageModelV3StreamPart): Json {
  if (part.type === "response-metadata") return toJson({ ...part, timestamp: part.timestamp?.toISOString() });
  return toJson(withBase64Data(part));
}

const FILE_PARTS = new Set(["file", "reasoning-file"]);

/** A file part's bytes as base64, which both versions accept in place of bytes. */
function withBase64Data<T extends { type: string }>(part: T): T {
  if (!FILE_PARTS.has(part.type)) return part;
  const data = (part as { data?: unknown }).data;
  if (data instanceof Uint8Array) return { ...part, data: base64(data) };
  const tagged = data as { type?: unknown; data?: unknown } | null;
  if (tagged?.type === "data" && tagged.data instanceof Uint8Array) return { ...part, data: { ...tagged, data: base64(tagged.data) } };
  return part; // a URL becomes its string in JSON, and a URL again on the way back
}

/** A version 4 file part that points at a URL gets its `URL` back (in place). */
function withUrlData(part: { type: string }): void {
  if (!FILE_PARTS.has(part.type)) return;
  const data = (part as { data?: { type?: unknown; url?: unknown } }).data;
  if (data?.type === "url" && typeof data.url === "string") data.url = new URL(data.url);
}

function base64(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString("base64");
}

/** A JSON round trip: `undefined` keys go, as they would in the journal. */
function toJson(value: unknown): Json {
  return JSON.parse(JSON.stringify(value)) as Json;
}

function describe(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  try {
    return JSON.stringify(error) ?? String(error);
  } catch {
    return String(error);
  }
}
