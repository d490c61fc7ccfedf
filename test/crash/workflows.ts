/**
 * The workflows the crash-test workers host: the real order flow of the demo, plus small ones
 * written for the tests (a durable sleep between two steps; a relay of short steps that two
 * processes can share; a fan-out of parallel steps; a charge that may be at-most-once).
 */
import { setTimeout as delay } from "node:timers/promises";
import { z } from "zod";
import { type AnyWorkflow, durable, StepInterruptedError } from "waymark";
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

export { orderFlow };

export const crashWorkflows: AnyWorkflow[] = [orderFlow, napFlow, relayFlow, fanFlow, chargeFlow];
