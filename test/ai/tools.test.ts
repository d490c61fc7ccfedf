/**
 * `durableTools` on the test runtime, inside real `generateText` loops. The model is the AI SDK's
 * mock (`ai/test`, the provider stand-in) scripted per turn; tools are plain AI SDK tools.
 */
import type { LanguageModelV3CallOptions, LanguageModelV3GenerateResult } from "@ai-sdk/provider";
import { generateText, stepCountIs, tool, type ToolSet } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { durable, WorkflowDefinitionError } from "waymark";
import { durableModel, durableTools, type DurableToolsOptions, toolApproval, toolContext } from "waymark/ai";
import { createTestRuntime } from "waymark/testing";

const usage = { inputTokens: { total: 10, noCache: undefined, cacheRead: undefined, cacheWrite: undefined }, outputTokens: { total: 5, text: 5, reasoning: undefined } };
const done = (t: string): LanguageModelV3GenerateResult => ({ content: [{ type: "text", text: t }], finishReason: { unified: "stop", raw: "stop" }, usage, warnings: [] });
const calls = (...list: Array<[string, object]>): LanguageModelV3GenerateResult => ({
  content: list.map(([name, input], i) => ({ type: "tool-call" as const, toolCallId: `c${i}-${name}`, toolName: name, input: JSON.stringify(input) })),
  finishReason: { unified: "tool-calls", raw: "tool_calls" },
  usage,
  warnings: [],
});
/** The tool results the model was shown in a call, as `toolName: output`. */
function shown(options: LanguageModelV3CallOptions | undefined): Array<[string, unknown]> {
  return (options?.prompt ?? []).flatMap((m) => (m.role === "tool" ? m.content.flatMap((p) => (p.type === "tool-result" ? [[p.toolName, p.output] as [string, unknown]] : [])) : []));
}

/** A workflow running one `generateText` over `tools`, then waiting for `go` (so a replay follows). */
function toolFlow<T extends ToolSet>(name: string, model: MockLanguageModelV3, tools: () => T, options: DurableToolsOptions<T, { go: z.ZodObject; pay_approval: typeof toolApproval }> = {}) {
  return durable({ name, input: z.object({}), signals: { go: z.object({}), pay_approval: toolApproval } }, async (_input, step) => {
    const result = await generateText({ model: durableModel(step, model), tools: durableTools(step, tools(), options), prompt: "go", stopWhen: stepCountIs(5), maxRetries: 0 });
    await step.waitForSignal("go");
    return result.text;
  });
}

describe("durableTools", () => {
  it("runs a tool as a step with its own retries and the idempotency key <runId>/<stepId>; a replay does not run it again", async () => {
    const seen: Array<{ key: string | undefined; attempt: number | undefined }> = [];
    const model = new MockLanguageModelV3({ doGenerate: [calls(["charge", { cents: 500 }]), done("charged")] });
    const tools = () => ({
      charge: tool({
        inputSchema: z.object({ cents: z.number() }),
        execute: ({ cents }, options) => {
          const ctx = toolContext(options);
          seen.push({ key: ctx?.idempotencyKey, attempt: ctx?.attempt });
          if (seen.length < 3) throw new Error("gateway hiccup");
          return { chargeId: `ch_${cents}` };
        },
      }),
    });
    const flow = toolFlow("tools-retry", model, tools, { tools: { charge: { retries: { attempts: 3, initialDelay: "10s", jitter: 0 } } } });
    const rt = createTestRuntime({ workflows: [flow] });
    await rt.start(flow, { runId: "t-1", input: {} });
    expect(await rt.get("t-1")).toMatchObject({ status: "suspended", waitingFor: "retry:tool.charge" });
    await rt.advance("30s"); // 10 s, then 20 s of backoff: virtual time
    await rt.signal("t-1", "go", {});
    expect((await rt.get("t-1")).result).toBe("charged");
    expect(seen).toEqual([1, 2, 3].map((attempt) => ({ key: "t-1/tool.charge", attempt })));
    expect(shown(model.doGenerateCalls[1])).toEqual([["charge", { type: "json", value: { chargeId: "ch_500" } }]]);
  });

  it("a tool past its timeout sees its AbortSignal fire; when its retries are spent the model is told and the loop goes on", async () => {
    const aborted: string[] = [];
    const model = new MockLanguageModelV3({ doGenerate: [calls(["slow", {}]), done("gave up")] });
    const tools = () => ({
      slow: tool({
        inputSchema: z.object({}),
        execute: (_input, { abortSignal }) =>
          new Promise((_resolve, reject) => abortSignal?.addEventListener("abort", () => (aborted.push(String(abortSignal.reason)), reject(abortSignal.reason)))),
      }),
    });
    const flow = toolFlow("tools-timeout", model, tools, { timeout: "30ms", retries: 1 });
    const rt = createTestRuntime({ workflows: [flow] });
    await rt.start(flow, { runId: "t-2", input: {} });
    expect(aborted).toEqual(['StepTimeoutError: step "tool.slow" timed out after 30 ms']);
    const [[name, output]] = shown(model.doGenerateCalls[1]) as [[string, { type: string; value: string }]];
    expect(name).toBe("slow");
    expect(output).toMatchObject({ type: "error-text", value: expect.stringContaining('step "tool.slow" failed after 1 attempt: StepTimeoutError') });
    await rt.signal("t-2", "go", {});
    expect((await rt.get("t-2")).result).toBe("gave up");
  });

  it("the SDK's needsApproval decides per call (journaled); a call over the limit waits for a human, the other runs at once", async () => {
    const paid: number[] = [];
    let asked = 0;
    const model = new MockLanguageModelV3({ doGenerate: [calls(["pay", { cents: 50 }], ["pay", { cents: 50_000 }]), done("paid what I could")] });
    const tools = () => ({
      pay: tool({
        inputSchema: z.object({ cents: z.number() }),
        needsApproval: ({ cents }) => (asked++, cents > 10_000),
        execute: ({ cents }, options) => (paid.push(cents), { paid: cents, approvedBy: toolContext(options)?.approval?.approver ?? null }),
      }),
    });
    const flow = toolFlow("tools-approval", model, tools, { approval: { signal: "pay_approval", timeout: "1h" } });
    const rt = createTestRuntime({ workflows: [flow] });
    await rt.start(flow, { runId: "t-3", input: {} });
    expect(await rt.get("t-3")).toMatchObject({ status: "suspended", waitingFor: "signal:pay_approval" });
    expect(paid).toEqual([50]);

    await rt.signal("t-3", "pay_approval", { approved: true, approver: "cfo" });
    expect(paid).toEqual([50, 50_000]);
    expect(asked, "needsApproval's answers came from the journal on replay").toBe(2);
    expect(shown(model.doGenerateCalls[1])).toEqual([
      ["pay", { type: "json", value: { paid: 50, approvedBy: null } }],
      ["pay", { type: "json", value: { paid: 50_000, approvedBy: "cfo" } }],
    ]);
    const ids = new Set(rt.events.map((e) => e.stepId));
    expect(ids).toEqual(new Set(["model", "tool.pay.needs-approval", "tool.pay.needs-approval#2", "tool.pay", "pay_approval", "tool.pay#2", "model#2", "go"]));
  });

  it("a per-tool approval option without the SDK's flag approves every call; a timeout tells the model and skips the tool", async () => {
    let ran = 0;
    const model = new MockLanguageModelV3({ doGenerate: [calls(["wipe", {}]), done("not allowed")] });
    const tools = () => ({ wipe: tool({ inputSchema: z.object({}), execute: () => (ran++, { wiped: true }) }) });
    const flow = toolFlow("tools-timeout-approval", model, tools, { tools: { wipe: { approval: { signal: "pay_approval", timeout: "24h" } } } });
    const rt = createTestRuntime({ workflows: [flow] });
    await rt.start(flow, { runId: "t-4", input: {} });
    await rt.advance("24h");
    expect(shown(model.doGenerateCalls[1])).toEqual([["wipe", { type: "json", value: { approved: false, toolName: "wipe", reason: "nobody approved this call within 24h; it was not run" } }]]);
    expect(ran).toBe(0);
  });

  it("a tool that needs approval with no approval option is refused when the tools are wrapped, not hidden as a tool error", async () => {
    const model = new MockLanguageModelV3({ doGenerate: [done("never")] });
    const tools = () => ({ risky: tool({ inputSchema: z.object({}), needsApproval: true, execute: () => ({}) }) });
    const flow = toolFlow("tools-no-approval", model, tools);
    const rt = createTestRuntime({ workflows: [flow] });
    await rt.start(flow, { runId: "t-5", input: {} });
    const run = await rt.get("t-5");
    expect(run.status).toBe("failed");
    expect(run.error).toMatchObject({ name: new WorkflowDefinitionError("x").name, message: expect.stringContaining('tool "risky" needs approval') });
    expect(model.doGenerateCalls).toHaveLength(0);
  });
});
