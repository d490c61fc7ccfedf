import { describe, expect, it } from "vitest";
import { createRegistry, durable, Engine, NonRetryableError, RetryAfterError, StepFailedError } from "waymark";
import { createTestRuntime } from "waymark/testing";
import { backoffMs, resolveRetry } from "../../lib/core/retry.ts";
import { Counter, Empty } from "./helpers.ts";

describe("retries", () => {
  it("retries with growing backoff, journals each failed attempt, and succeeds", async () => {
    const attempts: number[] = [];
    const wf = durable({ name: "flaky", input: Empty }, async (_in, step) =>
      step.run(
        "call",
        ({ attempt }) => {
          attempts.push(attempt);
          if (attempt < 3) throw new Error(`boom ${attempt}`);
          return "ok";
        },
        { retries: { attempts: 4, initialDelay: "10s", factor: 3, jitter: 0 } },
      ),
    );
    const rt = createTestRuntime({ workflows: [wf] });
    await rt.start(wf, { runId: "f1", input: {} });
    expect(attempts).toEqual([1]);
    await rt.advance("9s");
    expect(attempts).toEqual([1]);
    await rt.advance("1s");
    expect(attempts).toEqual([1, 2]);
    await rt.advance("29s");
    expect(attempts).toEqual([1, 2]);
    await rt.advance("1s");
    expect(attempts).toEqual([1, 2, 3]);
    const run = await rt.get("f1");
    expect(run.status).toBe("completed");
    const kinds = (await rt.history("f1")).map((e) => e.key);
    expect(kinds).toEqual(["attempt#call#1", "attempt#call#2", "step#call"]);
  });

  it("keeps the attempt count across a crash: a new engine on the same journal continues at the next attempt", async () => {
    const attempts: number[] = [];
    const wf = durable({ name: "count", input: Empty, retries: { attempts: 2, initialDelay: "1s", jitter: 0 } }, async (_in, step) =>
      step.run("call", ({ attempt }) => {
        attempts.push(attempt);
        throw new Error("always");
      }),
    );
    const rt = createTestRuntime({ workflows: [wf] });
    await rt.start(wf, { runId: "c1", input: {} });
    expect(attempts).toEqual([1]);
    // A different process (fresh engine, nothing in memory) picks the run up after the backoff.
    const other = new Engine({ store: rt.store, wakes: rt.wakes, clock: rt.clock, workflows: createRegistry([wf]), owner: "other" });
    rt.clock.advance(1_000);
    expect(await other.invoke("c1")).toMatchObject({ status: "failed" });
    expect(attempts).toEqual([1, 2]);
    const run = await rt.get("c1");
    expect(run.status).toBe("failed");
    expect(run.error?.name).toBe("StepFailedError");
    expect(run.error?.message).toContain("after 2 attempts");
  });

  it("stops at once on NonRetryableError, and the workflow can catch StepFailedError to compensate", async () => {
    const svc = new Counter();
    const wf = durable({ name: "compensate", input: Empty }, async (_in, step) => {
      const hold = await step.run("reserve", () => "hold-1");
      try {
        await step.run("charge", () => {
          svc.hit("charge");
          throw new NonRetryableError("card declined", { code: "do_not_honor" });
        });
        return "charged";
      } catch (err) {
        if (!(err instanceof StepFailedError)) throw err;
        await step.run("release", () => svc.hit(`release:${hold}`));
        return { declined: err.failure.fields?.code, attempts: err.attempts, name: err.failure.name };
      }
    });
    const rt = createTestRuntime({ workflows: [wf] });
    await rt.start(wf, { runId: "n1", input: {} });
    expect((await rt.get("n1")).result).toEqual({ declined: "do_not_honor", attempts: 1, name: "NonRetryableError" });
    expect(svc.calls).toEqual(["charge", "release:hold-1"]);
  });

  it("rethrows a recorded failure on replay exactly as it was thrown live", async () => {
    const messages: string[] = [];
    const wf = durable({ name: "replay-error", input: Empty }, async (_in, step) => {
      try {
        await step.run("bad", () => {
          throw new NonRetryableError("nope", { status: 402 });
        });
      } catch (err) {
        messages.push(`${(err as Error).name}|${(err as Error).message}|${JSON.stringify((err as StepFailedError).failure.fields)}`);
      }
      await step.sleep("s", "1m");
      return messages.length;
    });
    const rt = createTestRuntime({ workflows: [wf] });
    await rt.start(wf, { runId: "re1", input: {} });
    await rt.advance("1m");
    expect(messages).toHaveLength(2);
    expect(messages[1]).toBe(messages[0]);
    expect(messages[0]).toBe('StepFailedError|step "bad" failed after 1 attempt: NonRetryableError: nope|{"status":402}');
  });

  it("honours RetryAfterError's time", async () => {
    const attempts: number[] = [];
    const wf = durable({ name: "retry-after", input: Empty }, async (_in, step) =>
      step.run("call", ({ attempt }) => {
        attempts.push(attempt);
        if (attempt === 1) throw new RetryAfterError("429", { after: "2m" });
        return attempt;
      }),
    );
    const rt = createTestRuntime({ workflows: [wf] });
    await rt.start(wf, { runId: "ra", input: {} });
    await rt.advance("119s");
    expect(attempts).toEqual([1]);
    await rt.advance("1s");
    expect(attempts).toEqual([1, 2]);
    expect((await rt.get("ra")).result).toBe(2);
  });

  it("counts a timed-out attempt as a failed attempt and aborts its signal", async () => {
    const aborted: boolean[] = [];
    const wf = durable({ name: "timeouts", input: Empty }, async (_in, step) => {
      try {
        await step.run(
          "hang",
          ({ signal }) =>
            new Promise((_resolve, reject) => {
              signal.addEventListener("abort", () => {
                aborted.push(true);
                reject(new Error("aborted"));
              });
            }),
          { timeout: 20, retries: 2 },
        );
        return "impossible";
      } catch (err) {
        return (err as StepFailedError).failure.name;
      }
    });
    const rt = createTestRuntime({ workflows: [wf] });
    await rt.start(wf, { runId: "t1", input: {} });
    await rt.advance("10s");
    expect((await rt.get("t1")).result).toBe("StepTimeoutError");
    expect(aborted).toEqual([true, true]);
  });

  it("derives jitter from run, step and attempt: spread between runs, identical on replay", () => {
    const policy = resolveRetry({ attempts: 5, initialDelay: "1s", factor: 2, jitter: 0.5 });
    const a = backoffMs(policy, 2, "run-a/charge");
    expect(backoffMs(policy, 2, "run-a/charge")).toBe(a);
    expect(a).toBeGreaterThanOrEqual(1000);
    expect(a).toBeLessThanOrEqual(3000);
    const spread = new Set(Array.from({ length: 20 }, (_, i) => backoffMs(policy, 2, `run-${i}/charge`)));
    expect(spread.size).toBeGreaterThan(10);
  });
});
