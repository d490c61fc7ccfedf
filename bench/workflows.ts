/** The workflows the benchmarks run: plain sequential steps, the shape the targets are set for. */
import { z } from "zod";
import { durable } from "../lib/index.ts";

/** Steps per run in every benchmark. */
export const STEPS = 1_000;

const Input = z.object({});

/** `STEPS` sequential `step.run` calls under one repeated name (`s`, `s#2`, … `s#1000`). */
export const sequential = durable({ name: "bench-sequential", input: Input }, async (_input, step) => {
  let last = 0;
  for (let i = 0; i < STEPS; i++) last = await step.run("s", () => i);
  return last;
});

/**
 * The same steps, then a one-hour sleep: every invocation before the hour is up replays all
 * `STEPS` records and suspends again, so the replay can be measured over and over on one run.
 */
export const sequentialThenSleep = durable({ name: "bench-sequential-sleep", input: Input }, async (_input, step) => {
  let last = 0;
  for (let i = 0; i < STEPS; i++) last = await step.run("s", () => i);
  await step.sleep("nap", "1h");
  return last;
});

export const benchWorkflows = [sequential, sequentialThenSleep];
