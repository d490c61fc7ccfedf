/**
 * One attempt of a step function (lib/core/attempt.ts): the fast path for a function that
 * returns without a promise, and the race against the timeout and the run's cancellation for one
 * that returns a promise. A fake clock drives the timers (ports `Timers`), a real Cancellation
 * the cancel.
 */
import { describe, expect, it } from "vitest";
import { runAttempt } from "../../lib/core/attempt.ts";
import { Cancellation } from "../../lib/core/cancellation.ts";
import { StepTimeoutError } from "../../lib/core/errors.ts";
import type { Timers } from "../../lib/ports.ts";
import type { StepRunContext } from "../../lib/core/definition.ts";

/** Timers that fire only when told: `fire()` runs every timer set and not yet cleared. */
function manualTimers(): Timers & { fire(): void; pending(): number } {
  const set = new Set<() => void>();
  return {
    after(_ms, fn) {
      set.add(fn);
      return () => set.delete(fn);
    },
    defer(fn) {
      setImmediate(fn);
    },
    fire() {
      for (const fn of [...set]) {
        set.delete(fn);
        fn();
      }
    },
    pending: () => set.size,
  };
}

describe("runAttempt", () => {
  it("returns a synchronous result at once, runs the function in the call, and leaves no timer or listener behind", async () => {
    const timers = manualTimers();
    const cancel = new Cancellation(undefined);
    let ran = false;
    const attempt = runAttempt("k", "s", () => ((ran = true), 42), 1, 5_000, cancel.signal, timers);
    expect(ran).toBe(true); // called in the call, not a turn later
    await expect(attempt).resolves.toBe(42);
    expect(timers.pending()).toBe(0);
    // A cancel after the attempt ended touches nothing of it.
    cancel.request("late");
  });

  it("turns a synchronous throw into the attempt's failure", async () => {
    await expect(runAttempt("k", "s", () => {
      throw new TypeError("bad");
    }, 1, undefined, new Cancellation(undefined).signal)).rejects.toThrow(TypeError);
  });

  it("fails a promise-returning function with StepTimeoutError when its timeout passes, and aborts its signal", async () => {
    const timers = manualTimers();
    let signal: AbortSignal | undefined;
    const attempt = runAttempt("k", "s", (ctx) => {
      signal = ctx.signal;
      return new Promise<number>(() => {});
    }, 1, 100, undefined, timers);
    timers.fire();
    await expect(attempt).rejects.toBeInstanceOf(StepTimeoutError);
    expect(signal?.aborted).toBe(true);
    expect(signal?.reason).toBeInstanceOf(StepTimeoutError);
  });

  it("fails with the cancel's reason when the run is cancelled while the function runs, and aborts the signal it asks for later", async () => {
    const cancel = new Cancellation(undefined);
    let resolve: (v: number) => void = () => {};
    const attempt = runAttempt("k", "s", () => new Promise<number>((r) => (resolve = r)), 1, undefined, cancel.signal);
    expect(cancel.request("stop")).toBe(true);
    await expect(attempt).rejects.toMatchObject({ name: "CancelledError" });
    resolve(1); // the function goes on; its result is ignored
  });

  it("fails at once when the run was cancelled before it began, the function still run a turn later with its signal aborted", async () => {
    const cancel = new Cancellation(undefined);
    cancel.request("before");
    let seen: AbortSignal | undefined;
    let ranInCall = true;
    let called = false;
    const attempt = runAttempt("k", "s", (ctx) => {
      called = true;
      seen = ctx.signal;
      return 1;
    }, 1, undefined, cancel.signal);
    ranInCall = called;
    await expect(attempt).rejects.toMatchObject({ name: "CancelledError" });
    await new Promise((r) => setImmediate(r));
    expect(ranInCall).toBe(false);
    expect(called).toBe(true);
    expect(seen?.aborted).toBe(true);
  });

  it("resolves with the promise's value when nothing stops it", async () => {
    const timers = manualTimers();
    await expect(runAttempt("k", "s", async (ctx) => `${ctx.idempotencyKey}#${ctx.attempt}`, 3, 1_000, new Cancellation(undefined).signal, timers)).resolves.toBe("k#3");
    expect(timers.pending()).toBe(0);
  });

  it("gives the function a context with what StepRunContext says and nothing of the attempt's own state", async () => {
    const timers = manualTimers();
    let seen: StepRunContext | undefined;
    const value = await runAttempt("run-1/s", "s", (ctx) => {
      seen = ctx;
      return Promise.resolve(ctx.signal.aborted);
    }, 2, 1_000, new Cancellation().signal, timers);
    expect(value).toBe(false);
    if (!seen) throw new Error("not called");
    expect(seen).toMatchObject({ idempotencyKey: "run-1/s", attempt: 2 });
    expect(Object.keys(seen).sort()).toEqual(["attempt", "idempotencyKey"]);
    // The attempt's controls cannot be reached from the function (one that replaced them could stop a timeout from failing it).
    for (const own of ["stop", "stopper", "stopped", "stoppedBy", "whenStopped", "controller"]) expect(own in seen).toBe(false);
    expect(seen.signal).toBeInstanceOf(AbortSignal);
  });
});

