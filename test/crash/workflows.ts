/**
 * The workflows the crash-test workers host: the real order flow of the demo, plus small ones
 * written for the tests (a durable sleep between two steps; a relay of short steps that two
 * processes can share; a fan-out of parallel steps; a charge that may be at-most-once; and the
 * composed step API: a `step.map`, a saga, a parent invoking a child, a continue-as-new loop).
 */
import { appendFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { z } from "zod";
import { type AnyWorkflow, CancelledError, durable, NonRetryableError, StepInterruptedError } from "waymark";
import { orderFlow } from "../../functions/order-flow.ts";
import { FakePayments } from "../../functions/services/payments.ts";

/** A step, a durable sleep of `napMs`, a step. Each step returns the time its body ran. */
export const napFlow = durable(
  { name: "crash-nap", input: z.object({ napMs: z.number().int().positive() }) },
  async ({ napMs }, step) => {
    const before = await step.run("before", () => Date.now());
    await step.sleep("cool-off", napMs);
    const after = await step.run("after", () => Date.now());
    return { before, after };
  },
);

/**
 * `legs` steps named `leg` (so `leg`, `leg#2`, …), each awaiting `legMs`, with a durable sleep
 * of `restMs` after every second leg: a run spends time in flight and in the wake table, so
 * two processes on one journal really interleave.
 */
export const relayFlow = durable(
  {
    name: "crash-relay",
    input: z.object({ legs: z.number().int().positive(), legMs: z.number().int().nonnegative(), restMs: z.number().int().positive() }),
  },
  async ({ legs, legMs, restMs }, step) => {
    const done: number[] = [];
    for (let leg = 1; leg <= legs; leg++) {
      done.push(
        await step.run("leg", async () => {
          await delay(legMs);
          return leg;
        }),
      );
      if (leg % 2 === 0 && leg < legs) await step.sleep("rest", restMs);
    }
    return done;
  },
);

/**
 * A fan-out (`Promise.all` of `fan-1` … `fan-n`, each awaiting its duration), then `after-1`, a
 * durable sleep `settle` (so a later invocation replays the fan-out), `after-2` and `after-3`.
 *
 * `fanMs[label]` gives the branch durations when the worker labelled `label` runs them (the body
 * reads the worker's `WORKER_LABEL`), `fanMs["*"]` for any other worker: two processes can then
 * finish the same fan-out in different orders, as two hosts with different latencies would.
 */
export const fanFlow = durable(
  {
    name: "crash-fan",
    input: z.object({
      fanMs: z.record(z.string(), z.array(z.number().int().nonnegative())).refine((m) => (m["*"]?.length ?? 0) > 0, "fanMs['*'] is required"),
      afterMs: z.number().int().nonnegative(),
      settleMs: z.number().int().positive(),
    }),
  },
  async ({ fanMs, afterMs, settleMs }, step) => {
    const branches = fanMs["*"]?.length ?? 0;
    const fan = await Promise.all(
      Array.from({ length: branches }, (_, i) =>
        step.run(`fan-${i + 1}`, async () => {
          const mine = fanMs[process.env.WORKER_LABEL ?? ""] ?? fanMs["*"];
          await delay(mine?.[i] ?? 0);
          return i + 1;
        }),
      ),
    );
    const leg = (n: number) => async () => {
      await delay(afterMs);
      return n;
    };
    const first = await step.run("after-1", leg(1));
    await step.sleep("settle", settleMs);
    const second = await step.run("after-2", leg(2));
    const third = await step.run("after-3", leg(3));
    return { fan, after: [first, second, third] };
  },
);

/** The fake payment provider of the test directory the worker runs in (`WAYMARK_DEMO_DIR`). */
const payments = () => new FakePayments(process.env.WAYMARK_DEMO_DIR ?? ".waymark/demo");

/**
 * `prepare` (unless `prepare: false`, which makes `charge` the run's first step), then `charge`
 * through the fake payment provider with the given delivery semantics.
 * An at-most-once charge that was interrupted is not run again: the workflow catches
 * `StepInterruptedError` and runs `reconcile`, which asks the provider whether the charge's
 * idempotency key was charged, and ends `reconciled` or `not-charged` accordingly.
 */
export const chargeFlow = durable(
  {
    name: "crash-charge",
    input: z.object({
      orderId: z.string().min(1),
      amount: z.number().positive(),
      semantics: z.enum(["at-least-once", "at-most-once"]),
      prepare: z.boolean().optional(),
    }),
  },
  async ({ orderId, amount, semantics, prepare }, step) => {
    if (prepare !== false) await step.run("prepare", () => ({ orderId }));
    try {
      const charge = await step.run("charge", ({ idempotencyKey }) => payments().charge(orderId, amount, { idempotencyKey }), { semantics });
      return { status: "charged", chargeId: charge.chargeId };
    } catch (err) {
      if (!(err instanceof StepInterruptedError)) throw err;
      const key = `${step.runId}/charge`;
      const found = await step.run("reconcile", () => payments().charges().find((c) => c.idempotencyKey === key)?.chargeId ?? null);
      return found === null ? { status: "not-charged" } : { status: "reconciled", chargeId: found };
    }
  },
);

/** One line of `gauge.jsonl`: a `step.map` item body starting or ending, in the process it ran in. */
export interface GaugeLine {
  ev: "start" | "end";
  key: string;
  pid: number;
  at: number;
}

function gauge(ev: GaugeLine["ev"], key: string): void {
  const line: GaugeLine = { ev, key, pid: process.pid, at: Date.now() };
  appendFileSync(join(process.env.WAYMARK_DEMO_DIR ?? ".", "gauge.jsonl"), `${JSON.stringify(line)}\n`);
}

/**
 * `step.map("square", 0…items-1, …, { concurrency })`: each item body notes its start and end in
 * `gauge.jsonl` (so a test can count bodies running at once, across processes), awaits
 * `itemMs` plus a little by index, and returns the item squared; then `sum` adds them up.
 */
export const mapFlow = durable(
  {
    name: "crash-map",
    input: z.object({ items: z.number().int().positive(), concurrency: z.number().int().positive(), itemMs: z.number().int().nonnegative() }),
  },
  async ({ items, concurrency, itemMs }, step) => {
    const squares = await step.map(
      "square",
      Array.from({ length: items }, (_, i) => i),
      (item, itemStep) =>
        itemStep.run("square", async ({ idempotencyKey }) => {
          gauge("start", idempotencyKey);
          await delay(itemMs + (item % 4) * 7);
          gauge("end", idempotencyKey);
          return item * item;
        }),
      { concurrency },
    );
    const sum = await step.run("sum", () => squares.reduce((a, b) => a + b, 0));
    return { squares, sum };
  },
);

/**
 * A saga over three bookings (`book-a`, `book-b`, `book-c`, each registering `undo-<leg>`), then
 * either a charge that is declined (`mode: "fail"`: a non-retryable failure) or a long durable
 * sleep `hold` that the test cancels (`mode: "cancel"`). Either way the workflow compensates
 * (`undo-c`, `undo-b`, `undo-a`, each awaiting `undoMs`) and rethrows: the run ends failed or
 * cancelled.
 */
export const sagaFlow = durable(
  {
    name: "crash-saga",
    input: z.object({ mode: z.enum(["fail", "cancel"]), undoMs: z.number().int().nonnegative() }),
  },
  async ({ mode, undoMs }, step) => {
    const saga = step.saga();
    for (const leg of ["a", "b", "c"]) {
      await step.run(`book-${leg}`, () => `booked-${leg}`);
      saga.add(`undo-${leg}`, async () => {
        await delay(undoMs);
        return `released-${leg}`;
      });
    }
    try {
      if (mode === "fail") {
        await step.run("charge", () => {
          throw new NonRetryableError("card declined");
        });
      } else {
        await step.sleep("hold", "1h");
      }
      return "unreachable";
    } catch (err) {
      if (mode === "cancel" && !(err instanceof CancelledError)) throw err;
      await saga.compensate();
      throw err;
    }
  },
);

/** The child of {@link parentFlow}: `c-reserve`, then `c-charge` through the fake payment provider (awaiting `chargeMs` first). */
export const childFlow = durable(
  { name: "crash-child", input: z.object({ orderId: z.string().min(1), amount: z.number().positive(), chargeMs: z.number().int().nonnegative() }) },
  async ({ orderId, amount, chargeMs }, step) => {
    const hold = await step.run("c-reserve", () => `hold-${orderId}`);
    const charge = await step.run("c-charge", async ({ idempotencyKey }) => {
      await delay(chargeMs);
      return payments().charge(orderId, amount, { idempotencyKey });
    });
    return { hold, chargeId: charge.chargeId };
  },
);

/** `p-prepare`, `step.invoke("pay", childFlow)` (child run `<runId>:pay`), then `p-finish` with the child's result. */
export const parentFlow = durable(
  { name: "crash-parent", input: z.object({ orderId: z.string().min(1), amount: z.number().positive(), chargeMs: z.number().int().nonnegative() }) },
  async ({ orderId, amount, chargeMs }, step) => {
    await step.run("p-prepare", () => orderId);
    const receipt = await step.invoke("pay", childFlow, { input: { orderId, amount, chargeMs } });
    return step.run("p-finish", () => ({ orderId, receipt }));
  },
);

/**
 * `kids` children of {@link childFlow} fanned out by `step.map` at `concurrency`, each item a
 * durable sub-context that `invoke`s its child (run `<runId>:kids:<i>:pay`), then `sum` over the receipts.
 */
export const fanChildrenFlow = durable(
  { name: "crash-fan-children", input: z.object({ kids: z.number().int().positive(), concurrency: z.number().int().positive(), chargeMs: z.number().int().nonnegative() }) },
  async ({ kids, concurrency, chargeMs }, step) => {
    const ids = Array.from({ length: kids }, (_, i) => `kid-${i}`);
    const receipts = await step.map("kids", ids, (orderId, item) => item.invoke("pay", childFlow, { input: { orderId, amount: 1, chargeMs } }), { concurrency });
    return step.run("sum", () => ({ children: receipts.length, charges: receipts.map((r) => r.chargeId) }));
  },
);

/**
 * A loop over items `cursor` … `total - 1` in batches of `batch`: one step `item-<i>` per item
 * (named by the item, so a step id says which incarnation it belongs to), adding its result to
 * `sum`; after each batch but the last, `step.continueAsNew` with the next cursor and the sum so
 * far. Incarnation k journals exactly items (k-1)·batch … k·batch-1.
 */
export const loopFlow = durable(
  {
    name: "crash-loop",
    input: z.object({ cursor: z.number().int().nonnegative(), total: z.number().int().positive(), batch: z.number().int().positive(), sum: z.number().int(), itemMs: z.number().int().nonnegative() }),
  },
  async ({ cursor, total, batch, sum, itemMs }, step): Promise<{ sum: number; lastCursor: number }> => {
    let acc = sum;
    const end = Math.min(cursor + batch, total);
    for (let i = cursor; i < end; i++) {
      acc += await step.run(`item-${i}`, async () => {
        await delay(itemMs);
        return 2 * i;
      });
    }
    if (end >= total) return { sum: acc, lastCursor: cursor };
    return step.continueAsNew({ cursor: end, total, batch, sum: acc, itemMs });
  },
);

/** One line of `lanes.jsonl`: a `crash-lane` step body starting or ending, in the process it ran in. */
export interface LaneLine {
  ev: "start" | "end";
  runId: string;
  customer: string;
  stepId: string;
  pid: number;
  worker: string;
  at: number;
}

/** At most this many `crash-lane` runs of one customer execute at once. */
export const LANE_LIMIT = 2;

/**
 * Flow control per key: `durable({ concurrency: { key: customer, limit: 2 } })`. One step
 * `work-<i>` per entry of `workMs`, each noting its start and end in `lanes.jsonl` (a synchronous
 * append, so a SIGKILL leaves a start without an end) around an await of that many ms: a test can
 * count the runs of one customer whose bodies run at the same instant, across processes.
 */
export const laneFlow = durable(
  {
    name: "crash-lane",
    input: z.object({ customer: z.string().min(1), workMs: z.array(z.number().int().nonnegative()).min(1) }),
    concurrency: { key: (input) => input.customer, limit: LANE_LIMIT },
  },
  async ({ customer, workMs }, step) => {
    const done: number[] = [];
    for (const [i, ms] of workMs.entries()) {
      const stepId = `work-${i + 1}`;
      done.push(
        await step.run(stepId, async () => {
          lane("start", step.runId, customer, stepId);
          await delay(ms);
          lane("end", step.runId, customer, stepId);
          return i + 1;
        }),
      );
    }
    return { customer, done };
  },
);

function lane(ev: LaneLine["ev"], runId: string, customer: string, stepId: string): void {
  const line: LaneLine = { ev, runId, customer, stepId, pid: process.pid, worker: process.env.WORKER_LABEL ?? "", at: Date.now() };
  appendFileSync(join(process.env.WAYMARK_DEMO_DIR ?? ".", "lanes.jsonl"), `${JSON.stringify(line)}\n`);
}

export { orderFlow };

export const crashWorkflows: AnyWorkflow[] = [orderFlow, napFlow, relayFlow, fanFlow, chargeFlow, mapFlow, sagaFlow, childFlow, parentFlow, fanChildrenFlow, loopFlow, laneFlow];
