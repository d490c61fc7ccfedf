/**
 * A model response through the journal and back (JSON only), for both versions of the AI SDK's
 * model interface: version 3 (ai 6) carries a generated file's bytes in `data`, version 4 (ai 7)
 * in `data: { type: "data", data }` or a URL in `data: { type: "url", url }`. The values below
 * are shaped as the provider packages declare them (@ai-sdk/provider 3.x and 4.x); the ai 7
 * path end to end runs in test/package/consumer.ts (`--ai 7`, on Node 22).
 */
import type { LanguageModelV3GenerateResult, LanguageModelV3StreamPart } from "@ai-sdk/provider";
import { describe, expect, it } from "vitest";
import { collectStream, decodeGenerate, decodeStream, encodeGenerate, type Json } from "../../lib/ai/model-record.ts";

const bytes = new Uint8Array([137, 80, 78, 71, 0, 255]);
const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };
const through = (value: Json): Json => JSON.parse(JSON.stringify(value)) as Json;

async function read(stream: ReadableStream<unknown>): Promise<unknown[]> {
  const parts: unknown[] = [];
  const reader = stream.getReader();
  for (let next = await reader.read(); !next.done; next = await reader.read()) parts.push(next.value);
  return parts;
}

describe("a generated response through the journal", () => {
  it("version 3: a file's bytes as base64, the timestamp a Date again", () => {
    const result = {
      content: [{ type: "text", text: "here" }, { type: "file", mediaType: "image/png", data: bytes }],
      finishReason: { unified: "stop", raw: "stop" },
      usage,
      warnings: [],
      response: { id: "r1", modelId: "m", timestamp: new Date("2026-01-02T03:04:05.000Z") },
    } as LanguageModelV3GenerateResult;
    const back = decodeGenerate(through(encodeGenerate(result)));
    expect(back.content[1]).toEqual({ type: "file", mediaType: "image/png", data: Buffer.from(bytes).toString("base64") });
    expect(back.response?.timestamp).toEqual(new Date("2026-01-02T03:04:05.000Z"));
  });

  it("version 4: tagged file data, bytes as base64 and a URL as a URL", () => {
    const result = {
      content: [
        { type: "file", mediaType: "image/png", data: { type: "data", data: bytes } },
        { type: "file", mediaType: "image/png", data: { type: "url", url: new URL("https://files.example/a.png") } },
        { type: "reasoning-file", mediaType: "image/png", data: { type: "data", data: "iVBORw==" } },
      ],
      finishReason: { unified: "stop", raw: "stop" },
      usage,
      warnings: [],
    } as unknown as LanguageModelV3GenerateResult;
    const back = decodeGenerate(through(encodeGenerate(result))) as unknown as { content: Array<{ data: { type: string; data?: unknown; url?: unknown } }> };
    expect(back.content[0]?.data).toEqual({ type: "data", data: Buffer.from(bytes).toString("base64") });
    expect(back.content[1]?.data.url).toBeInstanceOf(URL);
    expect(String(back.content[1]?.data.url)).toBe("https://files.example/a.png");
    expect(back.content[2]?.data).toEqual({ type: "data", data: "iVBORw==" });
  });
});

describe("a streamed response through the journal", () => {
  it("both versions' file parts, and the metadata's timestamp", async () => {
    const parts = [
      { type: "response-metadata", id: "r1", timestamp: new Date("2026-01-02T03:04:05.000Z") },
      { type: "file", mediaType: "image/png", data: bytes },
      { type: "file", mediaType: "image/png", data: { type: "data", data: bytes } },
      { type: "file", mediaType: "image/png", data: { type: "url", url: new URL("https://files.example/b.png") } },
      { type: "finish", finishReason: { unified: "stop", raw: "stop" }, usage },
    ] as unknown as LanguageModelV3StreamPart[];
    const recorded = await collectStream({ stream: new ReadableStream({ start: (c) => (parts.forEach((p) => c.enqueue(p)), c.close()) }) });
    const back = (await read(decodeStream(JSON.parse(JSON.stringify(recorded)) as typeof recorded).stream)) as Array<{ timestamp?: unknown; data?: { type?: string; data?: unknown; url?: unknown } | string }>;
    expect(back[0]?.timestamp).toEqual(new Date("2026-01-02T03:04:05.000Z"));
    expect(back[1]?.data).toBe(Buffer.from(bytes).toString("base64"));
    expect(back[2]?.data).toEqual({ type: "data", data: Buffer.from(bytes).toString("base64") });
    expect((back[3]?.data as { url: unknown }).url).toBeInstanceOf(URL);
    expect(back).toHaveLength(5);
  });
});
