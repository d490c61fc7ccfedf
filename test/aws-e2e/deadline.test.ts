/**
 * An invocation's deadline comes from the Lambda's remaining time: a step body still running
 * near the function's end is given up (`abandoned`) a margin before Lambda would stop the
 * function, so the batch answers (no timeout, no redelivery of the whole batch) and the run is
 * woken again once its lease lapses. The wake queue's visibility timeout here is far longer than
 * the test's deadline, so a redelivered message cannot be what finishes the run.
 */
import { setTimeout as delay } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { durable } from "waymark";
import { failoverTimings } from "../../lib/aws/config.ts";
import { peers } from "./endpoints.ts";
import { type E2e, createE2e } from "./harness.ts";
import type { StepLedger } from "./step-ledger.ts";

const TIMEOUT_MS = 3_000;
const timings = failoverTimings(TIMEOUT_MS / 1_000);

/** `slow` takes `firstMs` the first time its body runs (by the ledger), then returns at once; then `after`. */
const overrunFlow = (ledger: StepLedger) =>
  durable({ name: "overrun-flow", input: z.object({ firstMs: z.number().int().positive() }) }, async ({ firstMs }, step) => {
    const slow = await step.run("slow", async ({ idempotencyKey, attempt }) => {
      const before = ledger.read().some((e) => e.key === idempotencyKey);
      ledger.record(idempotencyKey, attempt);
      if (!before) await delay(firstMs);
      return before ? "second" : "first";
    });
    const after = await step.run("after", ({ idempotencyKey, attempt }) => ledger.record(idempotencyKey, attempt));
    return { slow, after: after === undefined };
  });

let e2e: E2e;
beforeAll(async () => {
  e2e = await createE2e({ endpoints: peers(), workflows: (ledger) => [overrunFlow(ledger)], visibilityTimeoutS: 300, config: { leaseTtlMs: timings.leaseTtlMs } });
});
afterAll(() => e2e.close());

describe("the invocation's deadline on Lambda", () => {
  it("a body that outruns the function is given up before the timeout; the batch answers and the run resumes when the lease lapses", async () => {
    const runId = "overrun-1";
    await e2e.client.start("overrun-flow", { runId, input: { firstMs: 3 * TIMEOUT_MS } });
    const loop = e2e.mapping({ functionTimeoutMs: TIMEOUT_MS });
    await loop.runUntil(e2e.finished([runId]), { deadlineMs: 60_000, what: "the run to finish" });

    const run = await e2e.run(runId);
    expect(run.status).toBe("completed");
    expect(run.result).toEqual({ slow: "second", after: true });
    expect(loop.invocations.filter((i) => i.error !== undefined), "no invocation ran into the function timeout").toEqual([]);
    const wakes = e2e.lines("wake", runId);
    expect(wakes.map((l) => l.outcome)).toEqual(["abandoned", "completed"]);
    // Given up a margin before the end: at most a tenth of the invocation's time (2 s at most).
    // The deadline is the context's end less the margin, however late the handler started (a
    // cold start on a busy machine), so it is measured from the context's start, not the wake's.
    const abandoned = wakes[0];
    expect(abandoned?.durationMs).toBeLessThan(TIMEOUT_MS);
    const answered = loop.invocations.find((i) => i.messageIds.length > 0)?.answeredAfterMs;
    expect(answered).toBeLessThan(TIMEOUT_MS);
    expect(answered).toBeGreaterThanOrEqual(TIMEOUT_MS - Math.min(2_000, TIMEOUT_MS / 10) - 5);
    // The second invocation came from the wake the abandoned one scheduled at its lease's end, not a redelivery.
    expect(wakes[1]?.reason).toBe("continue");
    expect(wakes[1]?.receiveCount).toBe(1);
    const executions = e2e.ledger.read().filter((x) => x.key === `${runId}/slow`);
    expect(executions).toHaveLength(2);
    const lapse = e2e.lines("abandoned", runId)[0]?.wakeAt;
    expect(typeof lapse).toBe("number");
    expect(executions[1]?.at ?? 0, "the body ran again only once the abandoned invocation's lease had lapsed").toBeGreaterThanOrEqual((lapse as number) - 5);
  });
});
