/**
 * The workflows the e2e tests host, written against the public API as a user would. Each step
 * body reports itself to a {@link StepLedger} first (the side effect), so tests can count how
 * often every idempotency key was executed.
 */
import { setTimeout as delay } from "node:timers/promises";
import { z } from "zod";
import { type Duration, durable, parseDuration } from "waymark";
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
