/**
 * Issue 20 item 3: typed call sites. `client.handle(flow, runId)` and `rt.handle(flow, runId)`
 * check the input, each signal's name and payload and the result against the workflow's types;
 * `client.start(flow, …)` / `rt.start(flow, …)` check the input. Every `@ts-expect-error` here
 * is checked by `npm run typecheck` (an unused directive is an error there), and each such call
 * also runs, to show the schemas refuse at run time what the types refuse at compile time.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  type AnyWorkflow,
  durable,
  InvalidInputError,
  RunFailedError,
  RunNotFinishedError,
  type RunOf,
  type SignalPayload,
  UnknownSignalError,
  type WorkflowInput,
  WorkflowMismatchError,
  type WorkflowResult,
} from "waymark";
import { createTestRuntime } from "waymark/testing";
import { createLocalRuntime } from "waymark/local";
import { tempDir } from "../http/helpers.ts";
import { join } from "node:path";

const Order = z.object({ id: z.string().min(1), amount: z.number().positive() });
const Approval = z.object({ approved: z.boolean(), approver: z.string().min(1) });

const approveOrder = durable({ name: "typed-order", input: Order, signals: { approval: Approval } }, async (order, step) => {
  const a = await step.waitForSignal("approval", { timeout: "1d" });
  if (!a.received) return { status: "expired" as const, id: order.id };
  if (!a.payload.approved) throw new Error(`rejected by ${a.payload.approver}`);
  return { status: "approved" as const, id: order.id, by: a.payload.approver };
});
const noSignals = durable({ name: "typed-plain", input: z.object({ n: z.number() }) }, async ({ n }, step) => {
  await step.sleep("pause", "1h");
  return n * 2;
});

// What the exported helper types say.
const input: WorkflowInput<typeof approveOrder> = { id: "o-1", amount: 10 };
const payload: SignalPayload<typeof approveOrder, "approval"> = { approved: true, approver: "ana" };
const outcome: WorkflowResult<typeof approveOrder> = { status: "expired", id: "o-1" };
// @ts-expect-error -- amount is a number
const badInput: WorkflowInput<typeof approveOrder> = { id: "o-1", amount: "10" };
// @ts-expect-error -- no such status
const badOutcome: WorkflowResult<typeof approveOrder> = { status: "paid", id: "o-1" };
void [input, payload, outcome, badInput, badOutcome];

describe("typed handles on the test runtime", () => {
  it("start, signal and result are typed by the workflow, and the run completes", async () => {
    const rt = createTestRuntime({ workflows: [approveOrder, noSignals] });
    const run = rt.handle(approveOrder, "o-1");
    expect(await run.start({ id: "o-1", amount: 10 })).toMatchObject({ runId: "o-1", created: true });
    expect(await run.signal("approval", { approved: true, approver: "ana" })).toMatchObject({ status: "delivered", waitId: "approval" });
    const result = await run.result();
    // The result's type is the workflow's: a union narrowed by its literal status.
    if (result.status === "approved") {
      const by: string = result.by;
      expect(by).toBe("ana");
    }
    expect(result).toEqual({ status: "approved", id: "o-1", by: "ana" });
    const meta: RunOf<typeof approveOrder> = await run.get();
    expect(meta.status).toBe("completed");
    if (meta.status === "completed") expect(meta.result.id).toBe("o-1");
    // @ts-expect-error -- before narrowing on status, result may be absent
    expect(() => meta.result.id).not.toThrow();

    const plain = rt.handle(noSignals, "p-1");
    await plain.start({ n: 21 });
    await rt.advance("1h");
    const doubled: number = await plain.result();
    expect(doubled).toBe(42);
  });

  it("a wrong input does not compile, and is refused at run time with nothing written", async () => {
    const rt = createTestRuntime({ workflows: [approveOrder] });
    // @ts-expect-error -- amount is a number
    await expect(rt.handle(approveOrder, "o-2").start({ id: "o-2", amount: "10" })).rejects.toBeInstanceOf(InvalidInputError);
    // @ts-expect-error -- id is missing
    await expect(rt.start(approveOrder, { runId: "o-2", input: { amount: 10 } })).rejects.toBeInstanceOf(InvalidInputError);
    // @ts-expect-error -- the client's start is typed the same way
    await expect(rt.client.start(approveOrder, { runId: "o-2", input: { id: 2, amount: 10 } })).rejects.toBeInstanceOf(InvalidInputError);
    expect((await rt.client.list()).runs).toEqual([]);
  });

  it("a wrong signal name or payload does not compile, and is refused at run time with nothing written", async () => {
    const rt = createTestRuntime({ workflows: [approveOrder, noSignals] });
    const run = rt.handle(approveOrder, "o-3");
    await run.start({ id: "o-3", amount: 10 });
    const before = JSON.stringify(await rt.history("o-3"));
    // @ts-expect-error -- "aproval" is not a signal of typed-order
    await expect(run.signal("aproval", { approved: true, approver: "ana" })).rejects.toBeInstanceOf(UnknownSignalError);
    // @ts-expect-error -- approved is a boolean
    await expect(run.signal("approval", { approved: "yes", approver: "ana" })).rejects.toBeInstanceOf(InvalidInputError);
    // @ts-expect-error -- approver is required
    await expect(run.signal("approval", { approved: true })).rejects.toBeInstanceOf(InvalidInputError);
    const plain = rt.handle(noSignals, "p-2");
    await plain.start({ n: 1 });
    // @ts-expect-error -- typed-plain declares no signals at all
    await expect(plain.signal("approval", { approved: true, approver: "ana" })).rejects.toBeInstanceOf(UnknownSignalError);
    expect(JSON.stringify(await rt.history("o-3"))).toBe(before);
  });

  it("a wrong use of the result does not compile", async () => {
    const rt = createTestRuntime({ workflows: [approveOrder] });
    const run = rt.handle(approveOrder, "o-4");
    await run.start({ id: "o-4", amount: 10 });
    await rt.advance("1d");
    const result = await run.result();
    // @ts-expect-error -- the status is a string literal, not a number
    const n: number = result.status;
    // @ts-expect-error -- `by` exists only on the approved outcome
    const by: string = result.by;
    expect([n, by]).toEqual(["expired", undefined]);
  });

  it("the string-keyed forms stay for callers that hold names, checked at run time", async () => {
    const rt = createTestRuntime({ workflows: [approveOrder] });
    const untyped: AnyWorkflow = approveOrder;
    await rt.start("typed-order", { runId: "o-5", input: { id: "o-5", amount: 10 } });
    await expect(rt.start(untyped, { runId: "o-6", input: { nonsense: true } })).rejects.toBeInstanceOf(InvalidInputError);
    await expect(rt.signal("o-5", "approval", { approved: "yes" })).rejects.toBeInstanceOf(InvalidInputError);
    await rt.signal("o-5", "approval", { approved: true, approver: "ana" });
    expect((await rt.get("o-5")).result).toEqual({ status: "approved", id: "o-5", by: "ana" });
  });

  it("result() says why there is none: not finished (with what the run waits for), failed, cancelled", async () => {
    const rt = createTestRuntime({ workflows: [approveOrder] });
    const waiting = rt.handle(approveOrder, "o-7");
    await waiting.start({ id: "o-7", amount: 10 });
    const early = await waiting.result().catch((e: unknown) => e);
    expect(early).toBeInstanceOf(RunNotFinishedError);
    expect((early as RunNotFinishedError).message).toContain("waiting for signal:approval");
    expect((early as RunNotFinishedError).message).toContain("rt.advance");

    await waiting.signal("approval", { approved: false, approver: "bo" });
    const failed = await waiting.result().catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(RunFailedError);
    expect(failed).toMatchObject({ status: "failed", failure: { message: "rejected by bo" } });

    const cancelled = rt.handle(approveOrder, "o-8");
    await cancelled.start({ id: "o-8", amount: 10 });
    expect(await cancelled.cancel({ reason: "withdrawn" })).toMatchObject({ outcome: "requested" });
    await expect(cancelled.result()).rejects.toMatchObject({ name: "RunFailedError", status: "cancelled", failure: { name: "CancelledError" } });
  });

  it("a handle refuses a run of another workflow under its id, writing nothing", async () => {
    const rt = createTestRuntime({ workflows: [approveOrder, noSignals] });
    await rt.handle(noSignals, "x-1").start({ n: 1 });
    const wrong = rt.handle(approveOrder, "x-1");
    const before = JSON.stringify(await rt.history("x-1"));
    await expect(wrong.get()).rejects.toBeInstanceOf(WorkflowMismatchError);
    await expect(wrong.result()).rejects.toBeInstanceOf(WorkflowMismatchError);
    await expect(wrong.signal("approval", { approved: true, approver: "ana" })).rejects.toThrow('run "x-1" is a run of workflow "typed-plain", not "typed-order"');
    expect(JSON.stringify(await rt.history("x-1"))).toBe(before);
  });
});

describe("typed handles on a client", () => {
  it("result() waits for the run to end on the local runtime, and a timeout says what it waits for", async () => {
    const runtime = createLocalRuntime({ workflows: [approveOrder], file: join(tempDir("waymark-typed-"), "journal.db") });
    await runtime.start();
    try {
      const run = runtime.client.handle(approveOrder, "l-1");
      await run.start({ id: "l-1", amount: 10 });
      const result = run.result({ timeout: "60s" });
      await expect(runtime.client.handle(approveOrder, "l-1").result({ timeout: "50ms" })).rejects.toThrow(/has not ended: it is (pending|running|suspended)/);
      await run.signal("approval", { approved: true, approver: "ana" });
      expect(await result).toEqual({ status: "approved", id: "l-1", by: "ana" });
    } finally {
      await runtime.close();
    }
  });
});
