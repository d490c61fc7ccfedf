/**
 * CloudWatch metrics in Embedded Metric Format, from the AWS runtime's real handler (DynamoDB
 * Local, the SQS emulator): one document per invocation with the documented `_aws` envelope
 * (Timestamp, CloudWatchMetrics with Namespace, Dimensions and Metrics), every metric and
 * dimension it names present at the root; steps executed and replayed, retries, suspensions,
 * budget used and run duration; a run that fails on its invocation budget counts in
 * `RunsOutOfBudget`, the metric the construct's alarm watches.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { durable } from "../../lib/durable.ts";
import { METRIC, METRICS_NAMESPACE } from "../../lib/observe/metrics.ts";
import { peers } from "../aws-e2e/endpoints.ts";
import { type E2e, createE2e } from "../aws-e2e/harness.ts";

const napFlow = durable({ name: "metered-flow", input: z.object({}) }, async (_input, step) => {
  await step.run("one", () => 1);
  await step.run("two", () => 2);
  await step.sleep("nap", "1s");
  return step.run("three", () => 3);
});

type Doc = Record<string, unknown> & { _aws: { Timestamp: number; CloudWatchMetrics: Array<{ Namespace: string; Dimensions: string[][]; Metrics: Array<{ Name: string; Unit: string }> }> } };

let e2e: E2e;
beforeAll(async () => {
  e2e = await createE2e({ endpoints: peers(), workflows: () => [napFlow] });
});
afterAll(() => e2e.close());

async function metered(runId: string, config: { maxInvocations?: number } = {}): Promise<Doc[]> {
  const docs: Doc[] = [];
  const handler = e2e.newHandler(config, {}, { metrics: { functionName: "orders-fn", write: (line) => docs.push(JSON.parse(line) as Doc) } });
  await e2e.client.start("metered-flow", { runId, input: {} });
  await e2e.mapping({ handler }).runUntil(e2e.finished([runId]), { what: `${runId} to finish` });
  return docs.filter((d) => d.runId === runId);
}

describe("EMF metrics", () => {
  it("one document per invocation, in the documented envelope, with the run's counts", async () => {
    const docs = await metered("metered-1");
    expect(docs).toHaveLength(2);
    for (const doc of docs) {
      const [directive, ...others] = doc._aws.CloudWatchMetrics;
      expect(others).toEqual([]);
      expect(doc._aws.Timestamp).toEqual(expect.any(Number));
      expect(directive?.Namespace).toBe(METRICS_NAMESPACE);
      expect(directive?.Dimensions).toEqual([["FunctionName"], ["FunctionName", "Workflow"]]);
      // Every dimension is a string at the root; every metric a number there.
      for (const set of directive?.Dimensions ?? []) for (const d of set) expect(doc[d]).toEqual(expect.any(String));
      for (const m of directive?.Metrics ?? []) expect(doc[m.Name], m.Name).toEqual(expect.any(Number));
      expect(doc).toMatchObject({ FunctionName: "orders-fn", Workflow: "metered-flow" });
    }
    const [first, second] = docs;
    expect(first).toMatchObject({ [METRIC.stepsExecuted]: 2, [METRIC.stepsReplayed]: 0, [METRIC.suspensions]: 1, [METRIC.outOfBudget]: 0, [METRIC.budgetUsed]: 100 / 10_000 });
    expect(first?.[METRIC.runDuration]).toBeUndefined();
    expect(second).toMatchObject({ [METRIC.stepsExecuted]: 1, [METRIC.stepsReplayed]: 3, [METRIC.suspensions]: 0, [METRIC.budgetUsed]: 200 / 10_000, outcome: "completed" });
    expect(second?.[METRIC.runDuration]).toBeGreaterThanOrEqual(1_000);
    expect(second?._aws.CloudWatchMetrics[0]?.Metrics).toContainEqual({ Name: METRIC.runDuration, Unit: "Milliseconds" });
  });

  it("a run that fails on its invocation budget counts in RunsOutOfBudget", async () => {
    const docs = await metered("metered-budget", { maxInvocations: 1 });
    expect((await e2e.run("metered-budget")).status).toBe("failed");
    expect(docs.map((d) => [d.outcome, d[METRIC.outOfBudget], d[METRIC.budgetUsed]])).toEqual([
      ["suspended", 0, 100],
      ["failed", 1, 200],
    ]);
  });
});
