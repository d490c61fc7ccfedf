/**
 * The workflows the crash-test workers host: the real order flow of the demo, plus two small
 * ones written for the tests (a durable sleep between two steps; a relay of short steps that two
 * processes can share).
 */
import { setTimeout as delay } from "node:timers/promises";
import { z } from "zod";
import { type AnyWorkflow, durable } from "waymark";
import { orderFlow } from "../../functions/order-flow.ts";

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

export { orderFlow };

export const crashWorkflows: AnyWorkflow[] = [orderFlow, napFlow, relayFlow];
