/**
 * continueAsNew moves the signals nobody consumed to the next incarnation, and only those: a
 * signal the same invocation consumed (one that waited in the buffer for its wait, or a child's
 * end) must not move on to be consumed again — an approval that signs off two incarnations, or a
 * stale child result. And each incarnation's `step.invoke` starts a child of its own.
 * On the testing runtime and on a real SQLite journal (the local runtime).
 */
import { join } from "node:path";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { durable } from "waymark";
import { createTestRuntime } from "waymark/testing";
import { createLocalRuntime } from "waymark/local";

const Go = z.object({ v: z.number() });
/** Naps (the signal arrives meanwhile and is buffered), then waits for it, then continues. */
const napLoop = durable({ name: "nap-loop", input: z.object({ round: z.number() }), signals: { go: Go } }, async ({ round }, step) => {
  await step.sleep("nap", "1s");
  const go = await step.waitForSignal("go", { timeout: "1h" });
  if (round < 2) return step.continueAsNew({ round: round + 1 });
  return go.received ? { got: go.payload.v } : "timed out";
});

const double = durable({ name: "double", input: z.object({ n: z.number() }) }, async ({ n }, step) => step.run("once", () => n * 2));
/** Three incarnations, each invoking `double` under the same step name. */
const rounds = durable({ name: "rounds", input: z.object({ round: z.number(), sum: z.number() }) }, async ({ round, sum }, step) => {
  const doubled = await step.invoke("double", double, { input: { n: round } });
  if (round < 3) return step.continueAsNew({ round: round + 1, sum: sum + doubled });
  return { sum: sum + doubled };
});

describe("continueAsNew consumes each signal once", () => {
  it("a buffered signal consumed just before the switch stays behind: the next incarnation waits for a new one (before: it got the same one again)", async () => {
    const rt = createTestRuntime({ workflows: [napLoop] });
    await rt.start(napLoop, { runId: "n1", input: { round: 1 } });
    await rt.client.signal("n1", "go", { v: 1 }, { signalId: "g1" });
    await rt.advance("2s");
    expect(await rt.get("n1")).toMatchObject({ status: "suspended", incarnation: 2 });
    expect((await rt.client.history("n1", { incarnation: 2 })).entries.map((e) => e.key)).not.toContain("signal#g1");
    await rt.client.signal("n1", "go", { v: 2 }, { signalId: "g2" });
    await rt.advance("2s");
    expect(await rt.get("n1")).toMatchObject({ status: "completed", result: { got: 2 } });
  });

  it("each incarnation's step.invoke starts its own child (<run>:i<k>:<step>) and gets its result (before: the first child's, again)", async () => {
    const rt = createTestRuntime({ workflows: [rounds, double] });
    await rt.start(rounds, { runId: "r1", input: { round: 1, sum: 0 } });
    await rt.advance("1m");
    expect(await rt.get("r1")).toMatchObject({ status: "completed", result: { sum: 2 + 4 + 6 } });
    expect((await rt.client.list({})).runs.map((r) => r.runId).sort()).toEqual(["r1", "r1:double", "r1:i2:double", "r1:i3:double"]);
  });

  it("the same on SQLite with the local runtime's pool", async () => {
    const rt = createLocalRuntime({ workflows: [rounds, double], file: join(mkdtempSync(join(tmpdir(), "waymark-once-")), "j.db") });
    rt.start();
    try {
      await rt.client.start(rounds, { runId: "r2", input: { round: 1, sum: 0 } });
      expect(await rt.waitForRun("r2", { timeoutMs: 20_000 })).toMatchObject({ status: "completed", result: { sum: 12 } });
    } finally {
      await rt.close();
    }
  });
});
