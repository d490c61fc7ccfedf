/**
 * Issue 17: durations, timeouts and deadlines are bounded where they enter — one year at most
 * (as the longest run of AWS Step Functions) — with a modelled, non-retryable error, so that no
 * stored time is beyond what JavaScript, DynamoDB or the Scheduler can hold. Before, a wait whose
 * timeout came from input (8.64e15 ms) was accepted and broke every page that showed it, and an
 * invalid duration failed the run with a bare TypeError.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { durable, InvalidDurationError, parseDuration, RetryAfterError } from "waymark";
import { createTestRuntime } from "waymark/testing";

const YEAR = 365 * 86_400_000;

describe("durations and moments are bounded", () => {
  it("parseDuration accepts 0 to one year, and refuses the rest with InvalidDurationError", () => {
    expect(parseDuration("365d")).toBe(YEAR);
    expect(parseDuration(0)).toBe(0);
    for (const bad of ["366d", 8.64e15, YEAR + 1, -1, Number.NaN, Number.POSITIVE_INFINITY, "soon", "10 years"] as const) {
      expect(() => parseDuration(bad as never)).toThrow(InvalidDurationError);
    }
    const err = (() => {
      try {
        parseDuration("400d");
      } catch (e) {
        return e;
      }
    })() as InvalidDurationError;
    expect(err).toMatchObject({ name: "InvalidDurationError", retryable: false, value: "400d" });
    expect(err.message).toMatch(/365 days/);
  });

  it("durable() refuses a timeout, debounce or rate period over a year at definition", () => {
    const input = z.object({});
    expect(() => durable({ name: "too-long", input, timeout: "400d" }, async () => 1)).toThrow(InvalidDurationError);
    expect(() => durable({ name: "too-long-2", input, debounce: { key: () => "k", period: 8.64e15 } }, async () => 1)).toThrow(InvalidDurationError);
  });

  it("a sleep, a wait's timeout, a sleepUntil or a step timeout from input over a year fails the run with InvalidDurationError, and records no such step", async () => {
    const Input = z.object({ ms: z.number(), kind: z.enum(["sleep", "wait", "until", "timeout"]) });
    const flow = durable({ name: "from-input", input: Input, signals: { go: z.object({}) } }, async ({ ms, kind }, step) => {
      if (kind === "sleep") await step.sleep("pause", ms);
      if (kind === "wait") await step.waitForSignal("go", { timeout: ms });
      if (kind === "until") await step.sleepUntil("pause", new Date(step.now().getTime() + ms));
      if (kind === "timeout") await step.run("slow", () => "done", { timeout: ms });
      return "never";
    });
    const rt = createTestRuntime({ workflows: [flow] });
    for (const kind of ["sleep", "wait", "until", "timeout"] as const) {
      await rt.start(flow, { runId: `r-${kind}`, input: { ms: 8.64e15, kind } });
      expect(await rt.get(`r-${kind}`)).toMatchObject({ status: "failed", error: { name: "InvalidDurationError" } });
      expect((await rt.history(`r-${kind}`)).filter((e) => e.key.startsWith("step#"))).toEqual([]);
    }
    await rt.start(flow, { runId: "r-ok", input: { ms: 60_000, kind: "sleep" } });
    expect((await rt.get("r-ok")).status).toBe("suspended");
  });

  it("a provider's Retry-After beyond a year retries a year away at most", async () => {
    let calls = 0;
    const flow = durable({ name: "retry-far", input: z.object({}), retries: 3 }, async (_in, step) =>
      step.run("call", () => {
        calls++;
        if (calls === 1) throw new RetryAfterError("come back much later", { at: new Date(8.64e15) });
        return "ok";
      }),
    );
    const rt = createTestRuntime({ workflows: [flow] });
    const started = rt.clock.now();
    await rt.start(flow, { runId: "far", input: {} });
    const attempt = (await rt.history("far")).find((e) => e.key.startsWith("attempt#"))?.record as { retryAt: number } | undefined;
    expect(attempt?.retryAt).toBe(started + YEAR);
  });
});
