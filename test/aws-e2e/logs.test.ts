/**
 * The runtime's structured logs, collected through the handler's `log` option: one `wake` line
 * per delivered message and one `step` line per executed step (run id, step id, attempt, outcome,
 * duration); steps replayed from the journal are not logged.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { peers } from "./endpoints.ts";
import { type E2e, createE2e } from "./harness.ts";
import { e2eWorkflows } from "./workflows.ts";

let e2e: E2e;
beforeAll(async () => {
  e2e = await createE2e({ endpoints: peers(), workflows: (ledger) => e2eWorkflows(ledger).all });
});
afterAll(() => e2e.close());

describe("structured logs", () => {
  it("one line per wake and per executed step; replayed steps are quiet", async () => {
    const runId = "logged-1";
    // Two invocations: work, work#2, then the nap suspends; after it, work and work#2 replay and work#3 runs.
    await e2e.client.start("steps-flow", { runId, input: { steps: 3, nap: "1s" } });
    const loop = e2e.mapping();
    await loop.runUntil(e2e.finished([runId]), { what: "the run to finish" });
    expect((await e2e.run(runId)).status).toBe("completed");

    const wakes = e2e.lines("wake", runId);
    expect(wakes).toHaveLength(loop.invocations.length);
    expect(wakes.map((l) => [l.level, l.reason, l.outcome, l.receiveCount])).toEqual([
      ["info", "start", "suspended", 1],
      ["info", "sleep", "completed", 1],
    ]);
    for (const l of wakes) expect(l.durationMs).toEqual(expect.any(Number));

    const runSteps = e2e.lines("step", runId).filter((l) => l.kind === "run");
    expect(runSteps.map((l) => [l.stepId, l.attempt, l.outcome])).toEqual([
      ["work", 1, "completed"],
      ["work#2", 1, "completed"],
      ["work#3", 1, "completed"],
    ]);
    for (const l of runSteps) expect(l).toMatchObject({ level: "info", runId, durationMs: expect.any(Number) });
    expect(e2e.lines("step", runId).filter((l) => l.outcome === "replayed"), "replay is quiet").toEqual([]);
    // Every line is one JSON object as CloudWatch Logs Insights reads it.
    for (const l of e2e.logs) expect(JSON.parse(JSON.stringify(l))).toEqual(l);
  });

  it("a failing step logs each attempt with its outcome and attempt number", async () => {
    const runId = "logged-poison";
    await e2e.client.start("poison-flow", { runId, input: {} });
    await e2e.mapping().runUntil(e2e.finished([runId]), { what: "the run to fail" });
    // Between attempts the run suspends on the retry's wake: a "blocked" line, with no attempt.
    expect(e2e.lines("step", runId).map((l) => [l.stepId, l.attempt, l.outcome])).toEqual([
      ["explode", 1, "retrying"],
      ["explode", undefined, "blocked"],
      ["explode", 2, "retrying"],
      ["explode", undefined, "blocked"],
      ["explode", 3, "failed"],
    ]);
    expect(e2e.lines("wake", runId).at(-1)).toMatchObject({ level: "warn", outcome: "failed" });
  });
});
