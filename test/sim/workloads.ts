/**
 * The workflows the simulator runs: small, but between them every rule of a run — a saga with
 * parallel branches, a sleep and an approval; an inbox that consumes signals and continues as
 * new; a fan-out `step.map`; a parent invoking a child; runs sharing a concurrency slot; an
 * at-most-once step. Every step body goes through `hooks.body`, which tells the ledger what
 * started (and which forward step it is, or whose compensation) and waits for the world to
 * finish it. The workflows catch what they expect, so a run that ends `failed` is a finding.
 */
import type { StepRunContext } from "../../lib/core/definition.ts";
import { defineWorkflow, type AnyWorkflow, type Workflow } from "../../lib/core/definition.ts";
import { CancelledError, ChildFailedError, StepInterruptedError } from "../../lib/core/errors.ts";
import type { StandardSchemaV1 } from "../../lib/core/standard-schema.ts";

/** What a body is, for the ledger. */
export interface BodyRole {
  role: "forward" | "compensation";
  /** A flow-control key whose limit counts this body. */
  flowKey?: string;
  atMostOnce?: boolean;
}

export interface Hooks {
  /** A step body: recorded as started, finished (or failed, transiently) when the world says. */
  body(ctx: StepRunContext, role: BodyRole): Promise<string>;
  /** The workflow caught the run's cancellation (it compensates next). */
  sawCancel(runId: string): void;
}

/** Accepts any JSON (the simulator's inputs are its own). */
function anything<T>(): StandardSchemaV1<unknown, T> {
  return { "~standard": { version: 1, vendor: "sim", validate: (value) => ({ value: value as T }) } };
}

const FORWARD: BodyRole = { role: "forward" };
const COMPENSATION: BodyRole = { role: "compensation" };
const RETRIES = { attempts: 20, initialDelay: "1s", maxDelay: "5s" } as const;

export interface SagaInput {
  legs: number;
  parallel: boolean;
  sleepMs: number;
  wait: boolean;
}

export interface InboxInput {
  /** Signals consumed so far (over earlier incarnations). */
  seen: number;
  /** Consume this many in all, two per incarnation. */
  total: number;
}

export interface FanoutInput {
  items: number;
  concurrency: number;
}

export interface ParentInput {
  childSteps: number;
}

export interface LimitedInput {
  key: string;
}

/** The simulator's workflows, their bodies going to `hooks`. */
export function simWorkflows(hooks: Hooks): AnyWorkflow[] {
  const saga = defineWorkflow({ name: "sim-saga", input: anything<SagaInput>(), signals: { approve: anything<{ ok: boolean }>() }, retries: RETRIES }, async (input, step) => {
    const undo = step.saga();
    try {
      for (let i = 0; i < input.legs; i++) {
        await step.run(`book${i}`, (ctx) => hooks.body(ctx, FORWARD));
        undo.add(`unbook${i}`, (ctx) => hooks.body(ctx, COMPENSATION));
      }
      if (input.parallel) {
        await Promise.all(
          ["a", "b"].map(async (branch) => {
            await step.run(`side-${branch}`, (ctx) => hooks.body(ctx, FORWARD));
            undo.add(`unside-${branch}`, (ctx) => hooks.body(ctx, COMPENSATION));
            await step.run(`more-${branch}`, (ctx) => hooks.body(ctx, FORWARD));
            undo.add(`unmore-${branch}`, (ctx) => hooks.body(ctx, COMPENSATION));
          }),
        );
      }
      if (input.sleepMs > 0) await step.sleep("pause", input.sleepMs);
      if (input.wait) {
        const approval = await step.waitForSignal("approve", { timeout: "10m" });
        if (!approval.received || !approval.payload.ok) {
          await undo.compensate();
          return "declined";
        }
      }
      await step.run("finalize", (ctx) => hooks.body(ctx, FORWARD));
      return "done";
    } catch (err) {
      if (err instanceof CancelledError) hooks.sawCancel(step.runId);
      await undo.compensate();
      throw err;
    }
  });

  const inbox = defineWorkflow({ name: "sim-inbox", input: anything<InboxInput>(), signals: { msg: anything<{ n: number }>() }, retries: RETRIES }, async (input, step) => {
    let seen = input.seen;
    for (let i = 0; i < 2 && seen < input.total; i++) {
      const got = await step.waitForSignal("msg", { timeout: "5m" });
      if (!got.received) return { seen, timedOut: true };
      await step.run(`handle${i}`, (ctx) => hooks.body(ctx, FORWARD));
      seen++;
    }
    if (seen < input.total) return step.continueAsNew({ seen, total: input.total });
    return { seen, timedOut: false };
  });

  const fanout = defineWorkflow({ name: "sim-fanout", input: anything<FanoutInput>(), retries: RETRIES }, async (input, step) => {
    const items = Array.from({ length: input.items }, (_, i) => i);
    const done = await step.map("item", items, (_item, item) => item.run("work", (ctx) => hooks.body(ctx, FORWARD)), { concurrency: input.concurrency });
    await step.run("report", (ctx) => hooks.body(ctx, FORWARD));
    return done.length;
  });

  const child: Workflow<{ steps: number }, string> = defineWorkflow({ name: "sim-child", input: anything<{ steps: number }>(), retries: RETRIES }, async (input, step) => {
    for (let i = 0; i < input.steps; i++) await step.run(`work${i}`, (ctx) => hooks.body(ctx, FORWARD));
    await step.sleep("settle", 2_000);
    return "child-done";
  });

  const parent = defineWorkflow({ name: "sim-parent", input: anything<ParentInput>(), retries: RETRIES }, async (input, step) => {
    try {
      const result = await step.invoke("child", child, { input: { steps: input.childSteps } });
      await step.run("after-child", (ctx) => hooks.body(ctx, FORWARD));
      return result;
    } catch (err) {
      if (err instanceof ChildFailedError) return `child ${err.status}`;
      throw err;
    }
  });

  const limited = defineWorkflow({ name: "sim-limited", input: anything<LimitedInput>(), retries: RETRIES, concurrency: { key: (i: LimitedInput) => i.key, limit: 1 } }, async (input, step) => {
    const role: BodyRole = { role: "forward", flowKey: `sim-limited:${input.key}` };
    await step.run("first", (ctx) => hooks.body(ctx, role));
    await step.run("second", (ctx) => hooks.body(ctx, role));
    return "limited-done";
  });

  const once = defineWorkflow({ name: "sim-once", input: anything<Record<string, never>>(), retries: RETRIES }, async (_input, step) => {
    try {
      await step.run("send", (ctx) => hooks.body(ctx, { role: "forward", atMostOnce: true }), { semantics: "at-most-once" });
      return "sent";
    } catch (err) {
      if (err instanceof StepInterruptedError) return "interrupted";
      throw err;
    }
  });

  return [saga, inbox, fanout, child, parent, limited, once] as AnyWorkflow[];
}

/** Hooks for replay-only checks: no body ever runs there. */
export const replayHooks: Hooks = {
  body: () => Promise.reject(new Error("a replay-only check ran a step body")),
  sawCancel: () => {},
};
