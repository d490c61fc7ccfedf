/**
 * Log lines in Powertools Logger's shape, on the AWS runtime's real handler (DynamoDB Local, the
 * SQS emulator): the default logger's lines carry exactly the standard keys a real Powertools
 * `Logger` writes (its own output is the reference), and a Powertools `Logger` given as
 * `logger` works as it is, with the run's keys (`runId`, `stepId`, `attempt`) beside its own.
 * `step.log` writes each line once, although the workflow's code replays on every invocation.
 */
import { Logger } from "@aws-lambda-powertools/logger";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { durable } from "../../lib/durable.ts";
import type { LambdaContext } from "../../lib/aws/lambda-types.ts";
import { createJsonLogger } from "../../lib/observe/logger.ts";
import { peers } from "../aws-e2e/endpoints.ts";
import { type E2e, createE2e } from "../aws-e2e/harness.ts";

/** Powertools Logger's documented standard keys (docs: Logger, "Standard structured keys"). */
const STANDARD_KEYS = ["level", "message", "timestamp", "service", "cold_start", "function_name", "function_memory_size", "function_arn", "function_request_id", "sampling_rate", "xray_trace_id"];
const lambda = { functionName: "orders-fn", memoryLimitInMB: "1024", invokedFunctionArn: "arn:aws:lambda:eu-west-1:123456789012:function:orders-fn" };
const TRACE_ENV = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1";

const loggingFlow = durable({ name: "logging-flow", input: z.object({ sku: z.string() }) }, async ({ sku }, step) => {
  step.log.info("starting", { sku });
  const hold = await step.run("reserve", () => ({ holdId: `h-${sku}` }));
  step.log.info("reserved", { holdId: hold.holdId });
  await step.sleep("nap", "1s");
  step.log.warn("woke up");
  await step.run("ship", () => "shipped");
  return hold.holdId;
});

let e2e: E2e;
beforeAll(async () => {
  vi.stubEnv("_X_AMZN_TRACE_ID", TRACE_ENV);
  e2e = await createE2e({ endpoints: peers(), workflows: () => [loggingFlow] });
});
afterAll(() => {
  e2e.close();
  vi.unstubAllEnvs();
});
afterEach(() => vi.restoreAllMocks());

/** The handler as Lambda calls it, with the context fields Powertools reads. */
const withContext = (handler: E2e["handler"]) => (event: unknown, context: LambdaContext) => handler(event, { ...context, ...lambda });

async function runToEnd(runId: string, handler: E2e["handler"]): Promise<void> {
  await e2e.client.start("logging-flow", { runId, input: { sku: "sku-1" } });
  await e2e.mapping({ handler: withContext(handler) }).runUntil(e2e.finished([runId]), { what: `${runId} to finish` });
  expect((await e2e.run(runId)).status).toBe("completed");
}

describe("log lines in Powertools Logger's shape", () => {
  it("the default logger writes Powertools' standard keys, the same set a real Powertools Logger writes", async () => {
    const lines: Array<Record<string, unknown>> = [];
    const logger = createJsonLogger({ service: "orders", write: (l) => lines.push(JSON.parse(l) as Record<string, unknown>) });
    await runToEnd("shape-1", e2e.newHandler({}, {}, { logger, metrics: false }));

    // The reference: what Powertools itself writes for the same Lambda context.
    const reference: string[] = [];
    vi.spyOn(process.stdout, "write").mockImplementation((chunk) => (reference.push(String(chunk)), true));
    const powertools = new Logger({ serviceName: "orders" });
    powertools.addContext({ ...lambda, awsRequestId: "r-1", getRemainingTimeInMillis: () => 1_000 } as never);
    powertools.info("reference");
    vi.restoreAllMocks();
    const referenceKeys = Object.keys(JSON.parse(reference.join("")) as object);
    expect(referenceKeys.sort()).toEqual([...STANDARD_KEYS].sort());

    const run = lines.filter((l) => l.runId === "shape-1");
    expect(run.length).toBeGreaterThan(0);
    for (const line of run) {
      expect(Object.keys(line)).toEqual(expect.arrayContaining(STANDARD_KEYS));
      expect(line).toMatchObject({ service: "orders", function_name: "orders-fn", function_memory_size: "1024", function_arn: lambda.invokedFunctionArn, sampling_rate: 0, xray_trace_id: "1-5759e988-bd862e3fe1be46a994272793" });
      expect(line.level).toMatch(/^(INFO|WARN|ERROR)$/);
      expect(line.timestamp).toEqual(new Date(String(line.timestamp)).toISOString());
      expect(line.function_request_id).toEqual(expect.any(String));
      expect(typeof line.cold_start).toBe("boolean");
    }
    // The first invocation of this container is its cold start; later ones are not.
    expect(run[0]?.cold_start).toBe(true);
    expect(run.at(-1)?.cold_start).toBe(false);
    const steps = run.filter((l) => l.event === "step" && l.kind === "run");
    expect(steps.map((l) => [l.message, l.stepId, l.attempt, l.level])).toEqual([
      ["step completed", "reserve", 1, "INFO"],
      ["step completed", "ship", 1, "INFO"],
    ]);
  });

  it("takes a Powertools Logger as it is; step.log writes each line once, not on every replay", async () => {
    const out: string[] = [];
    // Powertools writes WARN and ERROR lines to stderr.
    for (const stream of [process.stdout, process.stderr]) vi.spyOn(stream, "write").mockImplementation((chunk) => (out.push(String(chunk)), true));
    await runToEnd("powertools-1", e2e.newHandler({}, {}, { logger: new Logger({ serviceName: "orders" }), metrics: false }));
    vi.restoreAllMocks();
    const lines = out.join("").split("\n").filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.runId === "powertools-1");
    // Powertools' own keys from the context it was given, and no "reserved key dropped" warnings.
    for (const line of lines) expect(line).toMatchObject({ service: "orders", function_name: "orders-fn", function_request_id: expect.any(String) });
    expect(out.join("")).not.toContain("reserved key");

    // Two invocations (the nap suspends the run): the code before the nap ran twice, its lines once.
    expect(lines.filter((l) => l.event === "wake").map((l) => l.outcome)).toEqual(["suspended", "completed"]);
    const logged = lines.filter((l) => l.event === "log").map((l) => [l.level, l.message, l.stepId ?? null, l.sku ?? l.holdId ?? null]);
    expect(logged).toEqual([
      ["INFO", "starting", null, "sku-1"],
      ["INFO", "reserved", "reserve", "h-sku-1"],
      ["WARN", "woke up", "nap", null],
    ]);
    const attempts = lines.filter((l) => l.event === "step" && l.kind === "run").map((l) => [l.stepId, l.attempt]);
    expect(attempts).toEqual([["reserve", 1], ["ship", 1]]);
  });
});
