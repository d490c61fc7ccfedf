/**
 * The workflows the e2e tests host, written against the public API as a user would. Each step
 * body reports itself to a {@link StepLedger} first (the side effect), so tests can count how
 * often every idempotency key was executed.
 */
import { setTimeout as delay } from "node:timers/promises";
import { z } from "zod";
import { CancelledError, type Duration, durable, parseDuration, RetryAfterError } from "waymark";
import type { StepLedger } from "./step-ledger.ts";

/** A duration as the step API takes it ("2s", "20m"), checked when the run starts. */
const DurationText = z
  .string()
  .refine((text) => {
    try {
      parseDuration(text as Duration);
      return true;
    } catch {
      return false;
    }
  }, "not a duration")
  .transform((text) => text as Duration);

export const StepsInput = z.object({
  steps: z.number().int().min(1).max(500),
  /** How long each step body takes after its side effect (the crash window). */
  holdMs: z.number().int().nonnegative().default(0),
  /** A short sleep after the first half of the steps. */
  nap: DurationText.optional(),
});

/** The e2e workflows, reporting to `ledger`. */
export function e2eWorkflows(ledger: StepLedger) {
  /** `steps` sequential steps `work`, `work#2`, …, with an optional nap in the middle. */
  const stepsFlow = durable({ name: "steps-flow", input: StepsInput }, async ({ steps, holdMs, nap }, step) => {
    let sum = 0;
    for (let i = 1; i <= steps; i++) {
      sum += await step.run("work", async ({ idempotencyKey, attempt }) => {
        ledger.record(idempotencyKey, attempt);
        if (holdMs > 0) await delay(holdMs);
        return i;
      });
      if (nap !== undefined && i === Math.ceil(steps / 2)) await step.sleep("nap", nap);
    }
    return { sum };
  });

  /** One step, a sleep of the given length, one step. */
  const napFlow = durable({ name: "nap-flow", input: z.object({ nap: DurationText }) }, async ({ nap }, step) => {
    await step.run("before", ({ idempotencyKey, attempt }) => ledger.record(idempotencyKey, attempt));
    await step.sleep("nap", nap);
    await step.run("after", ({ idempotencyKey, attempt }) => ledger.record(idempotencyKey, attempt));
    return "rested";
  });

  /** A step that throws on every attempt (three, a second apart): the run must end failed. */
  const poisonFlow = durable({ name: "poison-flow", input: z.object({}) }, async (_input, step) => {
    await step.run(
      "explode",
      ({ idempotencyKey, attempt }) => {
        ledger.record(idempotencyKey, attempt);
        throw new Error(`boom on attempt ${attempt}`);
      },
      { retries: { attempts: 3, initialDelay: "1s", factor: 1, jitter: 0 } },
    );
    return "unreachable";
  });

  return { stepsFlow, napFlow, poisonFlow, all: [stepsFlow, napFlow, poisonFlow] };
}

/**
 * What the compose workflows' step bodies report besides the ledger (in-process only): how
 * many bodies run at once, and what a long body saw of its AbortSignal.
 */
export class BodyProbe {
  running = 0;
  maxRunning = 0;
  /** The `signal` of every attempt of `long-export`'s `export` step, in order. */
  readonly exportSignals: AbortSignal[] = [];
  /** Set when an `export` body noticed its signal abort (before it would have finished). */
  exportAbortedAt: number | undefined;

  async hold<T>(ms: number, value: T): Promise<T> {
    this.running++;
    this.maxRunning = Math.max(this.maxRunning, this.running);
    try {
      await delay(ms);
      return value;
    } finally {
      this.running--;
    }
  }
}

const Approval = z.object({ approved: z.boolean(), approver: z.string() });

/**
 * The second wave's compositions (cancellation, sagas, map, children, continueAsNew), written
 * against the public API, reporting every side effect to `ledger` and body concurrency to `probe`.
 */
export function composeWorkflows(ledger: StepLedger, probe: BodyProbe) {
  /** Reserve, register its release, wait 24 h for approval, charge; a cancellation compensates. */
  const approvalSaga = durable({ name: "approval-saga", input: z.object({ sku: z.string() }), signals: { approval: Approval } }, async ({ sku }, step) => {
    const saga = step.saga();
    const hold = await step.run("reserve", ({ idempotencyKey, attempt }) => (ledger.record(idempotencyKey, attempt), `hold-${sku}`));
    saga.add("release", ({ idempotencyKey, attempt }) => (ledger.record(idempotencyKey, attempt), `released ${hold}`));
    try {
      const approval = await step.waitForSignal("approval", { timeout: "24h" });
      if (!approval.received || !approval.payload.approved) {
        await saga.compensate();
        return "rejected";
      }
      return await step.run("charge", ({ idempotencyKey, attempt }) => (ledger.record(idempotencyKey, attempt), "charged"));
    } catch (err) {
      if (err instanceof CancelledError) await saga.compensate();
      throw err;
    }
  });

  /**
   * One long step (`export`) that waits for its signal to abort (at most `maxMs`) and then still
   * returns a result a moment later, as a body that ignores cancellation would; a `cleanup`
   * compensation.
   */
  const longExport = durable({ name: "long-export", input: z.object({ maxMs: z.number().int().positive() }) }, async ({ maxMs }, step) => {
    const saga = step.saga();
    saga.add("cleanup", ({ idempotencyKey, attempt }) => (ledger.record(idempotencyKey, attempt), "cleaned"));
    try {
      return await step.run("export", async ({ idempotencyKey, attempt, signal }) => {
        ledger.record(idempotencyKey, attempt);
        probe.exportSignals.push(signal);
        const began = Date.now();
        while (!signal.aborted && Date.now() - began < maxMs) await delay(20);
        if (signal.aborted) probe.exportAbortedAt = Date.now();
        await delay(200); // the late result
        return "exported";
      });
    } catch (err) {
      await saga.compensate();
      throw err;
    }
  });

  /** A whole-run timeout of 2 h; waits for approval with no timeout of its own. */
  const deadlineFlow = durable({ name: "deadline-flow", input: z.object({}), signals: { approval: Approval }, timeout: "2h" }, async (_input, step) => {
    const saga = step.saga();
    await step.run("reserve", ({ idempotencyKey, attempt }) => ledger.record(idempotencyKey, attempt));
    saga.add("release", ({ idempotencyKey, attempt }) => ledger.record(idempotencyKey, attempt));
    try {
      await step.waitForSignal("approval");
      return "approved";
    } catch (err) {
      await saga.compensate();
      throw err;
    }
  });

  /**
   * `step.map` over `n` items with the given concurrency; each body holds `holdMs`. Item
   * `retryIndex` asks for a retry 1 s later on its first attempt: the run suspends mid-map.
   */
  const fanOut = durable(
    { name: "fan-out", input: z.object({ n: z.number().int().positive(), concurrency: z.number().int().positive(), holdMs: z.number().int().nonnegative(), retryIndex: z.number().int().optional() }) },
    async ({ n, concurrency, holdMs, retryIndex }, step) => {
      const items = Array.from({ length: n }, (_, i) => i);
      const squares = await step.map(
        "item",
        items,
        (i, item) =>
          item.run("square", async ({ idempotencyKey, attempt }) => {
            ledger.record(idempotencyKey, attempt);
            if (i === retryIndex && attempt === 1) throw new RetryAfterError("busy, try again shortly", { after: "1s" });
            return probe.hold(holdMs, i * i);
          }),
        { concurrency },
      );
      return { count: squares.length, sum: squares.reduce((a, b) => a + b, 0), ordered: squares.every((v, i) => v === i * i) };
    },
  );

  /** A child: capture, a real 1 s SQS-delayed sleep, settle. */
  const childPay = durable({ name: "child-pay", input: z.object({ amount: z.number() }) }, async ({ amount }, step) => {
    await step.run("authorize", ({ idempotencyKey, attempt }) => ledger.record(idempotencyKey, attempt));
    await step.sleep("settle", "1s");
    return step.run("capture", ({ idempotencyKey, attempt }) => (ledger.record(idempotencyKey, attempt), `ch-${amount}`));
  });

  /** A parent that invokes `child-pay` and uses its result. */
  const parentOrder = durable({ name: "parent-order", input: z.object({ amount: z.number() }) }, async ({ amount }, step) => {
    await step.run("before", ({ idempotencyKey, attempt }) => ledger.record(idempotencyKey, attempt));
    const charge = await step.invoke("pay", childPay, { input: { amount } });
    await step.run("after", ({ idempotencyKey, attempt }) => ledger.record(idempotencyKey, attempt));
    return { charge };
  });

  /**
   * Adds `from`..`to - 1` in incarnations of `per` steps each (`continueAsNew` between them); the
   * incarnation starting at `napAt` takes a real 1 s sleep in the middle; each body holds `holdMs`.
   */
  const paged = durable(
    { name: "paged", input: z.object({ from: z.number().int(), to: z.number().int(), per: z.number().int().positive(), total: z.number().default(0), napAt: z.number().int().optional(), holdMs: z.number().int().nonnegative().optional() }) },
    async ({ from, to, per, total, napAt, holdMs }, step) => {
      let sum = total;
      const end = Math.min(from + per, to);
      for (let i = from; i < end; i++) {
        sum += await step.run("add", async ({ idempotencyKey, attempt }) => {
          ledger.record(idempotencyKey, attempt);
          if (holdMs !== undefined) await delay(holdMs);
          return i;
        });
        if (from === napAt && i === from) await step.sleep("nap", "1s");
      }
      if (end < to) return step.continueAsNew({ from: end, to, per, total: sum, ...(napAt === undefined ? {} : { napAt }), ...(holdMs === undefined ? {} : { holdMs }) });
      return { sum };
    },
  );

  /** A child that waits for an approval with no timeout, and a parent that invokes it. */
  const childApproval = durable({ name: "child-approval", input: z.object({}), signals: { approval: Approval } }, async (_input, step) => {
    const approval = await step.waitForSignal("approval");
    return approval.received ? approval.payload.approver : null;
  });
  const parentOfApproval = durable({ name: "parent-of-approval", input: z.object({}) }, async (_input, step) => step.invoke("child", childApproval, { input: {} }));

  return {
    approvalSaga,
    longExport,
    deadlineFlow,
    fanOut,
    childPay,
    parentOrder,
    paged,
    childApproval,
    parentOfApproval,
    all: [approvalSaga, longExport, deadlineFlow, fanOut, childPay, parentOrder, paged, childApproval, parentOfApproval],
  };
}
