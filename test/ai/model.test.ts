/**
 * `durableModel` on the test runtime. The provider is the AI SDK's own mock model (`ai/test`),
 * the stand-in for a real provider; `generateText` / `streamText` and the engine are real. Each
 * workflow waits for a signal after its model calls, so the second invocation replays them.
 */
import { APICallError, type LanguageModelV3GenerateResult, type LanguageModelV3StreamPart } from "@ai-sdk/provider";
import { generateText, stepCountIs, streamText, tool } from "ai";
import { convertArrayToReadableStream, MockLanguageModelV3 } from "ai/test";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { durable } from "waymark";
import { durableModel, durableTools, type DurableModelOptions } from "waymark/ai";
import { createTestRuntime } from "waymark/testing";

const usage = { inputTokens: { total: 10, noCache: undefined, cacheRead: undefined, cacheWrite: undefined }, outputTokens: { total: 5, text: 5, reasoning: undefined } };
const stamp = new Date("2026-01-01T00:00:00Z");
const text = (t: string): LanguageModelV3GenerateResult => ({ content: [{ type: "text", text: t }], finishReason: { unified: "stop", raw: "stop" }, usage, warnings: [], response: { id: "r1", modelId: "m", timestamp: stamp } });
const callTool = (name: string, input: object): LanguageModelV3GenerateResult => ({
  content: [{ type: "tool-call", toolCallId: `c-${name}`, toolName: name, input: JSON.stringify(input) }],
  finishReason: { unified: "tool-calls", raw: "tool_calls" },
  usage,
  warnings: [],
});
const streamOf = (t: string): LanguageModelV3StreamPart[] => [
  { type: "stream-start", warnings: [] },
  { type: "response-metadata", id: "s1", modelId: "m", timestamp: stamp },
  { type: "text-start", id: "0" },
  { type: "text-delta", id: "0", delta: t.slice(0, 5) },
  { type: "text-delta", id: "0", delta: t.slice(5) },
  { type: "text-end", id: "0" },
  { type: "finish", usage, finishReason: { unified: "stop", raw: "stop" } },
];

const Go = z.object({});

/** A workflow: one `generateText` (with an `add` tool), then a wait, then its result. */
function agentFlow(name: string, model: MockLanguageModelV3, setup: { system: () => string; options?: DurableModelOptions; description?: () => string }) {
  return durable({ name, input: z.object({}), signals: { go: Go } }, async (_input, step) => {
    const add = tool({ description: setup.description?.() ?? "adds", inputSchema: z.object({ a: z.number(), b: z.number() }), execute: ({ a, b }) => ({ sum: a + b }) });
    const result = await generateText({ model: durableModel(step, model, setup.options), system: setup.system(), prompt: "add 2 and 3", tools: durableTools(step, { add }), stopWhen: stepCountIs(4), maxRetries: 0 });
    await step.waitForSignal("go");
    return { text: result.text, steps: result.steps.length, timestampIsDate: result.response.timestamp instanceof Date };
  });
}

describe("durableModel with generateText", () => {
  it("journals each model call; a replay returns the recorded responses without calling the provider", async () => {
    const model = new MockLanguageModelV3({ doGenerate: [callTool("add", { a: 2, b: 3 }), text("2 + 3 = 5")] });
    const flow = agentFlow("gen-replay", model, { system: () => "be brief" });
    const rt = createTestRuntime({ workflows: [flow] });
    await rt.start(flow, { runId: "g-1", input: {} });
    expect(model.doGenerateCalls).toHaveLength(2);
    await rt.signal("g-1", "go", {});
    expect((await rt.get("g-1")).result).toEqual({ text: "2 + 3 = 5", steps: 2, timestampIsDate: true });
    expect(model.doGenerateCalls, "the provider was not asked again on replay").toHaveLength(2);
    const outcomes = rt.events.filter((e) => e.stepId.startsWith("model") || e.stepId.startsWith("tool.")).map((e) => `${e.stepId}:${e.outcome}`);
    expect(outcomes).toEqual(["model:completed", "tool.add:completed", "model#2:completed", "model:replayed", "tool.add:replayed", "model#2:replayed"]);
  });

  it("a replayed call whose request changed warns, naming the step and what changed, and keeps the recorded answer", async () => {
    let system = "be brief";
    let description = "adds";
    const warnings: Array<{ message: string; attributes: Record<string, unknown> }> = [];
    const model = new MockLanguageModelV3({ doGenerate: [callTool("add", { a: 2, b: 3 }), text("2 + 3 = 5")] });
    const logger = { warn: (message: string, attributes: Record<string, unknown>) => void warnings.push({ message, attributes }) };
    const flow = agentFlow("gen-changed", model, { system: () => system, description: () => description, options: { logger } });
    const rt = createTestRuntime({ workflows: [flow] });
    await rt.start(flow, { runId: "g-2", input: {} });
    expect(warnings).toEqual([]);

    system = "be very brief"; // a deploy edits the prompt while the run waits
    description = "adds two numbers";
    await rt.signal("g-2", "go", {});
    expect((await rt.get("g-2")).result).toMatchObject({ text: "2 + 3 = 5" });
    expect(model.doGenerateCalls).toHaveLength(2);
    expect(warnings.map((w) => w.attributes)).toEqual([
      { runId: "g-2", stepId: "model", changes: ["message 0 (system)", "tool add's definition"] },
      { runId: "g-2", stepId: "model#2", changes: ["message 0 (system)", "tool add's definition"] },
    ]);
    expect(warnings[0]?.message).toContain('model call "model" replayed its recorded response, but the request changed: message 0 (system)');
  });

  it("in strict mode a changed request fails the run with NonDeterminismError", async () => {
    let system = "be brief";
    const model = new MockLanguageModelV3({ doGenerate: [callTool("add", { a: 2, b: 3 }), text("2 + 3 = 5")] });
    const flow = agentFlow("gen-strict", model, { system: () => system, options: { onRequestChange: "strict" } });
    const rt = createTestRuntime({ workflows: [flow] });
    await rt.start(flow, { runId: "g-3", input: {} });
    system = "be very brief";
    await rt.signal("g-3", "go", {});
    const run = await rt.get("g-3");
    expect(run.status).toBe("failed");
    expect(run.error).toMatchObject({ name: "NonDeterminismError", message: expect.stringContaining('step "model"') });
    expect(run.error?.message).toContain("message 0 (system)");
  });

  it("an unchanged replay does not warn", async () => {
    const warnings: string[] = [];
    const model = new MockLanguageModelV3({ doGenerate: [callTool("add", { a: 2, b: 3 }), text("2 + 3 = 5")] });
    const flow = agentFlow("gen-same", model, { system: () => "be brief", options: { onRequestChange: (c) => void warnings.push(c.stepId) } });
    const rt = createTestRuntime({ workflows: [flow] });
    await rt.start(flow, { runId: "g-4", input: {} });
    await rt.signal("g-4", "go", {});
    expect((await rt.get("g-4")).status).toBe("completed");
    expect(warnings).toEqual([]);
  });
});

describe("durableModel and the provider's failures", () => {
  it("a 429 with retry-after is retried after that delay (the run sleeps, no compute held); a 400 fails at once", async () => {
    const limited = new APICallError({ message: "rate limited", url: "https://api.example/v1/chat?key=secret", requestBodyValues: { huge: "x".repeat(1000) }, statusCode: 429, responseHeaders: { "retry-after": "30" }, isRetryable: true });
    let calls = 0;
    const model = new MockLanguageModelV3({
      doGenerate: async () => {
        calls++;
        if (calls === 1) throw limited;
        return text("done");
      },
    });
    const flow = agentFlow("gen-429", model, { system: () => "s", options: { retries: 3 } });
    const rt = createTestRuntime({ workflows: [flow] });
    await rt.start(flow, { runId: "e-1", input: {} });
    expect(await rt.get("e-1")).toMatchObject({ status: "suspended", waitingFor: "retry:model" });
    await rt.advance("29s");
    expect(calls).toBe(1);
    await rt.advance("1s");
    expect(calls).toBe(2);
    expect((await rt.get("e-1")).waitingFor).toBe("signal:go");
    const attempt = (await rt.history("e-1")).find((h) => h.record?.type === "attempt");
    expect(JSON.stringify(attempt)).not.toContain("key=secret");
    expect(JSON.stringify(attempt)).not.toContain("x".repeat(100));

    const bad = new MockLanguageModelV3({ doGenerate: async () => Promise.reject(new APICallError({ message: "bad request", url: "https://api.example/v1/chat", requestBodyValues: {}, statusCode: 400, isRetryable: false })) });
    const badFlow = agentFlow("gen-400", bad, { system: () => "s", options: { retries: 5 } });
    const rt2 = createTestRuntime({ workflows: [badFlow] });
    await rt2.start(badFlow, { runId: "e-2", input: {} });
    const run = await rt2.get("e-2");
    expect(run.status).toBe("failed");
    expect(run.error?.message).toContain('step "model" failed after 1 attempt: ModelCallError: 400 from https://api.example/v1/chat');
    expect(bad.doGenerateCalls).toHaveLength(1);
  });
});

describe("durableModel with streamText", () => {
  function streamFlow(name: string, model: MockLanguageModelV3) {
    return durable({ name, input: z.object({}), signals: { go: Go } }, async (_input, step) => {
      const result = streamText({ model: durableModel(step, model, { retries: { attempts: 3, initialDelay: 0 } }), prompt: "hello", maxRetries: 0 });
      const chunks: string[] = [];
      for await (const chunk of result.textStream) chunks.push(chunk);
      await step.waitForSignal("go");
      return { chunks, id: (await result.response).id };
    });
  }

  it("collects the stream into the journal and streams it from there on replay", async () => {
    const model = new MockLanguageModelV3({ doStream: async () => ({ stream: convertArrayToReadableStream(streamOf("hello world")) }) });
    const flow = streamFlow("stream-replay", model);
    const rt = createTestRuntime({ workflows: [flow] });
    await rt.start(flow, { runId: "s-1", input: {} });
    await rt.signal("s-1", "go", {});
    expect((await rt.get("s-1")).result).toEqual({ chunks: ["hello", " world"], id: "s1" });
    expect(model.doStreamCalls).toHaveLength(1);
  });

  it("a stream that reports an error is not journaled as the answer: the attempt fails and is retried", async () => {
    let calls = 0;
    const model = new MockLanguageModelV3({
      doStream: async () => {
        calls++;
        const parts = calls === 1 ? [...streamOf("hello world").slice(0, 4), { type: "error" as const, error: new Error("connection reset") }] : streamOf("hello world");
        return { stream: convertArrayToReadableStream(parts) };
      },
    });
    const flow = streamFlow("stream-error", model);
    const rt = createTestRuntime({ workflows: [flow] });
    await rt.start(flow, { runId: "s-2", input: {} });
    await rt.signal("s-2", "go", {});
    expect((await rt.get("s-2")).result).toEqual({ chunks: ["hello", " world"], id: "s1" });
    expect(calls).toBe(2);
    const attempt = (await rt.history("s-2")).find((h) => h.record?.type === "attempt");
    expect(JSON.stringify(attempt)).toContain("ModelStreamError");
  });
});
