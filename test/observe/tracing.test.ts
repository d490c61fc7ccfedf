/**
 * OpenTelemetry spans, recorded by the SDK's in-memory exporter. On the local runtime (a real
 * SQLite file): one span per invocation and one per executed step attempt (its child, with run
 * and step attributes; replayed steps have none), a user's span inside a step body nests under
 * the step's, and each invocation links to the run's previous one. On the AWS runtime's real
 * handler (DynamoDB Local, the SQS emulator), the link crosses containers: the wake carries the
 * suspending invocation's `traceparent`.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { context, SpanStatusCode, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { BasicTracerProvider, InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { durable } from "../../lib/durable.ts";
import { createLocalRuntime } from "../../lib/local/runtime.ts";
import { parseWakeMessage } from "../../lib/aws/wake-message.ts";
import { peers } from "../aws-e2e/endpoints.ts";
import { createE2e } from "../aws-e2e/harness.ts";

const exporter = new InMemorySpanExporter();
beforeAll(() => {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
});
afterAll(() => {
  trace.disable();
  context.disable();
});
beforeEach(() => exporter.reset());

let failures = 0;
const tracedFlow = durable({ name: "traced-flow", input: z.object({ n: z.number() }) }, async ({ n }, step) => {
  await step.run("reserve", () => trace.getTracer("shop").startActiveSpan("inventory.reserve", (span) => (span.end(), n)));
  await step.sleep("nap", "1s");
  return step.run("charge", () => {
    if (failures++ === 0) throw new Error("card declined");
    return "charged";
  }, { retries: { attempts: 2, initialDelay: "1s", jitter: 0 } });
});

const spans = (name: string) => exporter.getFinishedSpans().filter((s) => s.name === name);
const invocationsOf = (runId: string) => spans("waymark.invocation").filter((s) => s.attributes["waymark.run.id"] === runId).sort((a, b) => timeOf(a) - timeOf(b));
const timeOf = (s: ReadableSpan) => s.startTime[0] * 1e9 + s.startTime[1];
const idOf = (s: ReadableSpan) => s.spanContext().spanId;

describe("spans on the local runtime", () => {
  const dir = mkdtempSync(join(tmpdir(), "waymark-tracing-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("one span per invocation and per executed step attempt, linked across suspensions", async () => {
    const rt = createLocalRuntime({ workflows: [tracedFlow], file: join(dir, "journal.db") });
    rt.start();
    try {
      await rt.client.start(tracedFlow, { runId: "traced-1", input: { n: 3 } });
      expect((await rt.waitForRun("traced-1", { timeoutMs: 120_000 })).status).toBe("completed");
    } finally {
      await rt.close();
    }
    // Start → reserve, nap suspends; nap over → charge fails, its retry suspends; retry → charge.
    const invocations = invocationsOf("traced-1");
    expect(invocations.map((s) => s.attributes["waymark.invocation.outcome"])).toEqual(["suspended", "suspended", "completed"]);
    for (const s of invocations) expect(s.attributes).toMatchObject({ "waymark.run.id": "traced-1" });

    const steps = exporter.getFinishedSpans().filter((s) => s.name.startsWith("waymark.step "));
    expect(steps.map((s) => [s.name, s.attributes["waymark.step.id"], s.attributes["waymark.step.attempt"], s.status.code])).toEqual([
      ["waymark.step reserve", "reserve", 1, SpanStatusCode.UNSET],
      ["waymark.step charge", "charge", 1, SpanStatusCode.ERROR],
      ["waymark.step charge", "charge", 2, SpanStatusCode.UNSET],
    ]);
    // Each step span is the child of its invocation's span, in the same trace.
    const [first, second, third] = invocations;
    const parents = steps.map((s) => s.parentSpanContext?.spanId);
    expect(parents).toEqual([first, second, third].map((s) => s && idOf(s)));
    for (const s of steps) expect(s.attributes).toMatchObject({ "waymark.run.id": "traced-1", "waymark.workflow": "traced-flow" });
    // The application's own span inside the step body nests under the step.
    expect(spans("inventory.reserve")[0]?.parentSpanContext?.spanId).toBe(steps[0] && idOf(steps[0]));
    // Each invocation after the first links to the run's previous one.
    expect(first?.links).toEqual([]);
    expect(second?.links.map((l) => l.context.spanId)).toEqual([first && idOf(first)]);
    expect(third?.links.map((l) => l.context.spanId)).toEqual([second && idOf(second)]);
  });
});

describe("spans on the AWS runtime", () => {
  it("a run resumed by another container links to the invocation that suspended it, through its wake", async () => {
    const napFlow = durable({ name: "nap-flow", input: z.object({}) }, async (_input, step) => {
      await step.run("before", () => 1);
      await step.sleep("nap", "1s");
      return step.run("after", () => 2);
    });
    const e2e = await createE2e({ endpoints: peers(), workflows: () => [napFlow] });
    try {
      const runId = "traced-aws-1";
      await e2e.client.start("nap-flow", { runId, input: {} });
      // Container A runs the start and suspends; container B (its own runtime) takes the nap's wake.
      await e2e.mapping({ handler: e2e.newHandler() }).runUntil(async () => invocationsOf(runId).length === 1, { what: "the first invocation" });
      await e2e.mapping({ handler: e2e.newHandler() }).runUntil(e2e.finished([runId]), { what: "the run to finish" });
      const [a, b] = invocationsOf(runId);
      expect(a && b).toBeTruthy();
      const napWake = e2e.sent.map((m) => parseWakeMessage(m.body)).find((w) => w.reason === "sleep");
      expect(napWake?.traceparent).toBe(`00-${a?.spanContext().traceId}-${a && idOf(a)}-01`);
      expect(b?.links.map((l) => [l.context.spanId, l.attributes?.["waymark.link"]])).toEqual([[a && idOf(a), "wake"]]);
      expect(b?.attributes["waymark.invocation.outcome"]).toBe("completed");
    } finally {
      e2e.close();
    }
  });
});
