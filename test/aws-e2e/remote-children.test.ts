/**
 * Children hosted by another function, end to end: two Waymark functions ("orders" and
 * "payments"), each the real exported handler over its own DynamoDB Local table and its own SQS
 * emulator queue, each fed by its own event source loop, as two `DurableFunction`s deploy. The
 * parent starts and cancels its child by invoking the payments function (through the Lambda
 * Invoke STAND-IN, lambda-stand-in.ts: Lambda has no local peer), and the child's end comes back
 * as a message on the orders queue.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { ChildFailedError, durable, NonRetryableError } from "waymark";
import { peers } from "./endpoints.ts";
import { type E2e, createE2e } from "./harness.ts";
import { LambdaStandIn } from "./lambda-stand-in.ts";
import { lambdaContext } from "./event-source.ts";
import type { StepLedger } from "./step-ledger.ts";
import type { LambdaHandler } from "../../lib/aws/lambda.ts";
import { CHILD_ENTRY_ALIAS } from "../../lib/aws/child-entry.ts";
import { InvokeCommand } from "@aws-sdk/client-lambda";

/** What the payments function hosts. */
function paymentWorkflows(ledger: StepLedger) {
  const pay = durable({ name: "remote-pay", input: z.object({ amount: z.number() }) }, async ({ amount }, step) => {
    await step.run("authorize", ({ idempotencyKey, attempt }) => ledger.record(idempotencyKey, attempt));
    await step.sleep("settle", "1s");
    return step.run("capture", ({ idempotencyKey, attempt }) => (ledger.record(idempotencyKey, attempt), `ch-${amount}`));
  });
  const decline = durable({ name: "remote-decline", input: z.object({}) }, async (_input, step) =>
    step.run("charge", ({ idempotencyKey, attempt }) => {
      ledger.record(idempotencyKey, attempt);
      throw new NonRetryableError("card declined", { code: "do_not_honor" });
    }),
  );
  const hold = durable({ name: "remote-hold", input: z.object({}), signals: { release: z.object({}) } }, async (_input, step) => {
    await step.run("reserve", ({ idempotencyKey, attempt }) => ledger.record(idempotencyKey, attempt));
    await step.waitForSignal("release");
    return "released";
  });
  const quick = durable({ name: "remote-quick", input: z.object({ n: z.number() }) }, async ({ n }, step) =>
    step.run("once", ({ idempotencyKey, attempt }) => (ledger.record(idempotencyKey, attempt), n * 2)),
  );
  return { pay, decline, hold, quick };
}

/** Hosted by nobody: a parent that invokes it learns so. */
const nowhere = durable({ name: "remote-nowhere", input: z.object({}) }, async () => "never");

/** What the orders function hosts: parents of the payments workflows. */
function orderWorkflows(ledger: StepLedger) {
  const child = paymentWorkflows(ledger); // imported for their names and types, not hosted here
  const order = durable({ name: "remote-order", input: z.object({ amount: z.unknown() }) }, async ({ amount }, step) => {
    await step.run("before", ({ idempotencyKey, attempt }) => ledger.record(idempotencyKey, attempt));
    const charge = await step.invoke("pay", child.pay, { input: { amount: amount as number } });
    await step.run("after", ({ idempotencyKey, attempt }) => ledger.record(idempotencyKey, attempt));
    return { charge };
  });
  const declined = durable({ name: "remote-order-declined", input: z.object({}) }, async (_input, step) => {
    try {
      return await step.invoke("pay", child.decline, { input: {} });
    } catch (err) {
      if (err instanceof ChildFailedError) return { childRunId: err.childRunId, status: err.status, message: err.message };
      throw err;
    }
  });
  const holding = durable({ name: "remote-order-holding", input: z.object({}) }, async (_input, step) => step.invoke("hold", child.hold, { input: {} }));
  const lost = durable({ name: "remote-order-nowhere", input: z.object({}) }, async (_input, step) => step.invoke("go", nowhere, { input: {} }));
  /** Three incarnations, each invoking `quick` under the same step name. */
  const looping = durable({ name: "remote-order-looping", input: z.object({ round: z.number(), sum: z.number() }) }, async ({ round, sum }, step) => {
    const doubled = await step.invoke("double", child.quick, { input: { n: round } });
    if (round < 3) return step.continueAsNew({ round: round + 1, sum: sum + doubled });
    return { sum: sum + doubled };
  });
  const quickOne = durable({ name: "remote-order-quick", input: z.object({}) }, async (_input, step) => step.invoke("q", child.quick, { input: { n: 21 } }));
  return [order, declined, holding, lost, looping, quickOne];
}

let orders: E2e;
let payments: E2e;
let ordersHandler: LambdaHandler;
let lambda: LambdaStandIn;

beforeAll(async () => {
  lambda = new LambdaStandIn();
  // As child.grantInvoke(parent) configures them: the parent lists the child's function, the child the parent's queue.
  orders = await createE2e({ endpoints: peers(), workflows: orderWorkflows, config: { childFunctions: [`${LambdaStandIn.arnOf("payments")}:${CHILD_ENTRY_ALIAS}`] } });
  payments = await createE2e({ endpoints: peers(), workflows: (ledger) => Object.values(paymentWorkflows(ledger)), config: { parentQueues: [orders.queues.queueUrl] } });
  lambda.register("payments", payments.handler, [CHILD_ENTRY_ALIAS]);
  lambda.grant("orders", `payments:${CHILD_ENTRY_ALIAS}`); // the alias only, as grantInvoke does
  ordersHandler = orders.newHandler({}, { lambda: lambda.asClient("orders") });
});
afterAll(() => {
  orders?.close();
  payments?.close();
});

/** Both functions' event source loops, until `done` holds. */
async function runBoth(done: () => Promise<boolean>, what: string, duplicate = false): Promise<void> {
  let over = false;
  const until = async () => over || (over = await done());
  await Promise.all([
    orders.mapping({ handler: ordersHandler, duplicate }).runUntil(until, { what, deadlineMs: 40_000 }),
    payments.mapping({ duplicate }).runUntil(until, { what, deadlineMs: 40_000 }),
  ]);
}

const childStarts = (runId: string) => lambda.calls.filter((c) => c.event.waymark === "child-start" && c.event.runId === runId);

/** A direct invocation of the payments function, as a parent function (or anyone with the grant) would send it. */
async function invokePayments(event: Record<string, unknown>): Promise<{ ok: boolean; hosted?: boolean; error?: { name: string; message: string; issues?: unknown } }> {
  return (await payments.handler(event, lambdaContext())) as { ok: boolean };
}

describe("a parent in one function invoking a child hosted by another", () => {
  it("the child runs in the other function's journal, its result comes back through the parent's queue, every body once", async () => {
    await orders.client.start("remote-order", { runId: "o-1", input: { amount: 42 } });
    await runBoth(orders.finished(["o-1"]), "the parent to finish");

    expect(await orders.run("o-1")).toMatchObject({ status: "completed", result: { charge: "ch-42" } });
    // The child is a run of the payments function only, and it names its parent and the queue to answer on.
    expect(await orders.store.getRun("o-1:pay")).toBeUndefined();
    expect(await payments.run("o-1:pay")).toMatchObject({ status: "completed", workflow: "remote-pay", result: "ch-42" });
    const parentRecord = (await payments.client.history("o-1:pay")).entries.find((e) => e.key === "parent")?.record;
    expect(parentRecord).toMatchObject({ runId: "o-1", waitId: "pay", replyTo: orders.queues.queueUrl });
    // Started once, by the orders function, through the payments function's direct start.
    expect(childStarts("o-1:pay").map((c) => [c.caller, c.functionName])).toEqual([["orders", "payments"]]);
    // The end arrived on the orders queue and was recorded as the signal of the parent's wait.
    expect(orders.lines("child-end", "o-1").map((l) => l.status)).toEqual(["completed"]);
    const signal = (await orders.client.history("o-1")).entries.find((e) => e.key === "signal#child:o-1:pay")?.record;
    expect(signal).toMatchObject({ name: "__child", waitId: "pay", payload: { status: "completed", result: "ch-42" } });
    expect(Object.fromEntries(orders.ledger.counts("o-1"))).toEqual({ "o-1/before": 1, "o-1/after": 1 });
    expect(Object.fromEntries(payments.ledger.counts("o-1:pay"))).toEqual({ "o-1:pay/authorize": 1, "o-1:pay/capture": 1 });
  });

  it("with every message of both queues delivered twice, still one child run per parent and every body once", async () => {
    const runIds = ["o-2", "o-3", "o-4"];
    for (const [i, runId] of runIds.entries()) await orders.client.start("remote-order", { runId, input: { amount: i } });
    await runBoth(orders.finished(runIds), "the parents to finish", true);
    for (const [i, runId] of runIds.entries()) expect(await orders.run(runId), runId).toMatchObject({ status: "completed", result: { charge: `ch-${i}` } });
    const children = (await payments.client.list({})).runs.filter((r) => runIds.some((id) => r.runId === `${id}:pay`));
    expect(children.map((r) => [r.runId, r.status]).sort()).toEqual(runIds.map((id) => [`${id}:pay`, "completed"]));
    expect(orders.ledger.repeated(), "parent keys executed more than once").toEqual([]);
    expect(payments.ledger.repeated(), "child keys executed more than once").toEqual([]);
  });

  it("when the start's answer is lost, the retried start finds the child already there: one child run, one body", async () => {
    lambda.loseAnswers(1);
    await orders.client.start("remote-order", { runId: "o-5", input: { amount: 5 } });
    await runBoth(orders.finished(["o-5"]), "the parent to finish");
    expect(await orders.run("o-5")).toMatchObject({ status: "completed", result: { charge: "ch-5" } });
    expect(childStarts("o-5:pay").map((c) => c.lost)).toEqual([true, false]);
    expect(Object.fromEntries(payments.ledger.counts("o-5:pay"))).toEqual({ "o-5:pay/authorize": 1, "o-5:pay/capture": 1 });
    const start = (await orders.client.history("o-5")).entries.find((e) => e.key === "step#pay:start")?.record;
    expect(start).toMatchObject({ status: "ok", attempts: 2 });
  });

  it("a child that fails: the parent gets ChildFailedError with the child's error", async () => {
    await orders.client.start("remote-order-declined", { runId: "o-6", input: {} });
    await runBoth(orders.finished(["o-6"]), "the parent to finish");
    expect(await payments.run("o-6:pay")).toMatchObject({ status: "failed" });
    const run = await orders.run("o-6");
    expect(run).toMatchObject({ status: "completed", result: { childRunId: "o-6:pay", status: "failed" } });
    expect((run.result as { message: string }).message).toContain("card declined");
  });

  it("input the child's workflow refuses: the parent's step fails at once with InvalidInputError, and the other function writes nothing", async () => {
    await orders.client.start("remote-order", { runId: "o-7", input: { amount: "forty" } });
    await runBoth(orders.finished(["o-7"]), "the parent to finish");
    const run = await orders.run("o-7");
    expect(run.status).toBe("failed");
    expect(JSON.stringify(run.error)).toContain("InvalidInputError");
    expect(childStarts("o-7:pay")).toHaveLength(1); // not retried: retrying cannot fix it
    expect(await payments.store.getRun("o-7:pay")).toBeUndefined();
  });

  it("cancelling the parent while it waits cancels the child in the other function, and both end cancelled", async () => {
    await orders.client.start("remote-order-holding", { runId: "o-8", input: {} });
    await runBoth(async () => (await payments.store.getRun("o-8:hold"))?.waitingFor === "signal:release", "the child to wait for its release");
    expect((await orders.client.cancel("o-8", { reason: "customer left" })).outcome).toBe("requested");
    await runBoth(async () => (await orders.finished(["o-8"])()) && (await payments.finished(["o-8:hold"])()), "both to end");
    expect(await orders.run("o-8")).toMatchObject({ status: "cancelled" });
    const child = await payments.run("o-8:hold");
    expect(child.status).toBe("cancelled");
    expect(JSON.stringify(child.error)).toContain("its parent was cancelled: customer left");
    expect(lambda.calls.filter((c) => c.event.waymark === "child-cancel" && c.event.runId === "o-8:hold").map((c) => c.functionName)).toEqual(["payments"]);
  });

  it("a workflow that no granted function hosts: the parent fails naming it, and nothing is started anywhere", async () => {
    await orders.client.start("remote-order-nowhere", { runId: "o-9", input: {} });
    await runBoth(orders.finished(["o-9"]), "the parent to finish");
    const run = await orders.run("o-9");
    expect(run.status).toBe("failed");
    // Every granted function answered "not hosted here": not retried (a deploy, not a retry, could change it).
    expect(JSON.stringify(run.error)).toContain('no function this one may start hosts workflow \\"remote-nowhere\\"');
    expect(childStarts("o-9:go")).toHaveLength(1);
    expect(await payments.store.getRun("o-9:go")).toBeUndefined();
  });

  it("a lost start answer whose retry finds the child already over: its end is sent again, and the parent completes with it", async () => {
    lambda.loseAnswers(1);
    await orders.client.start("remote-order-quick", { runId: "o-10", input: {} });
    await runBoth(orders.finished(["o-10"]), "the parent to finish");
    expect(await orders.run("o-10")).toMatchObject({ status: "completed", result: 42 });
    const [first, retry] = childStarts("o-10:q");
    expect([first?.lost, retry?.lost]).toEqual([true, false]);
    // The retry came after the child had ended, so it sent the child's end again; both arrive, the second changes nothing.
    expect(retry?.at).toBeGreaterThan((await payments.run("o-10:q")).finishedAt ?? Infinity);
    await runBoth(async () => orders.lines("child-end", "o-10").length === 2, "the second copy of the end");
    expect((await orders.client.history("o-10")).entries.filter((e) => e.key.startsWith("signal#"))).toHaveLength(1);
    expect(Object.fromEntries(payments.ledger.counts("o-10:q"))).toEqual({ "o-10:q/once": 1 });
  });

  it("each incarnation of a parent (continueAsNew) gets a child of its own, with its own result", async () => {
    await orders.client.start("remote-order-looping", { runId: "o-11", input: { round: 1, sum: 0 } });
    await runBoth(orders.finished(["o-11"]), "the parent's three incarnations to finish");
    expect(await orders.run("o-11")).toMatchObject({ status: "completed", result: { sum: 12 } });
    for (const id of ["o-11:double", "o-11:i2:double", "o-11:i3:double"]) expect(await payments.run(id), id).toMatchObject({ status: "completed" });
    expect(payments.ledger.repeated()).toEqual([]);
  });
});

describe("what a direct invocation may name is checked, not trusted", () => {
  it("a start naming a reply queue no granted parent owns (here the child's own queue) is refused, and nothing is written", async () => {
    const before = (await payments.client.list({})).runs.length;
    const answer = await invokePayments({ waymark: "child-start", v: 1, workflow: "remote-quick", runId: "forged-1", input: { n: 1 }, parent: { runId: "victim", waitId: "pay", replyTo: payments.queues.queueUrl } });
    expect(answer).toMatchObject({ ok: false, error: { name: "InvalidInputError", issues: [{ path: "parent.replyTo" }] } });
    expect(await payments.store.getRun("forged-1")).toBeUndefined();
    expect((await payments.client.list({})).runs.length).toBe(before);
  });

  it("the same child id asked for by another parent (another deployment, another incarnation): RunConflictError, the first parent's child untouched", async () => {
    const parent = { runId: "p-x", waitId: "pay", replyTo: orders.queues.queueUrl };
    expect(await invokePayments({ waymark: "child-start", v: 1, workflow: "remote-hold", runId: "shared-1", input: {}, parent })).toEqual({ ok: true });
    for (const other of [{ ...parent, runId: "p-y" }, { ...parent, waitId: "pay2" }, { ...parent, incarnation: 2 }]) {
      expect(await invokePayments({ waymark: "child-start", v: 1, workflow: "remote-hold", runId: "shared-1", input: {}, parent: other }), JSON.stringify(other)).toMatchObject({ ok: false, error: { name: "RunConflictError" } });
    }
    const record = (await payments.client.history("shared-1")).entries.find((e) => e.key === "parent")?.record;
    expect(record).toMatchObject({ runId: "p-x", waitId: "pay", replyTo: orders.queues.queueUrl });
  });

  it("a cancel reaches only a child of the parent it names; malformed starts and cancels are refused with the reason", async () => {
    await payments.client.start("remote-hold", { runId: "top-level-1", input: {} });
    const cancel = (parent: Record<string, unknown>) => invokePayments({ waymark: "child-cancel", v: 1, runId: "top-level-1", reason: "forged", parent });
    expect(await cancel({ runId: "anyone", waitId: "x", replyTo: orders.queues.queueUrl })).toEqual({ ok: false, hosted: false });
    expect((await payments.run("top-level-1")).status).not.toBe("cancelled");
    expect((await payments.client.history("top-level-1")).entries.some((e) => e.key === "cancel")).toBe(false);
    for (const bad of [
      { waymark: "child-start", v: 1, workflow: "remote-quick", runId: "bad id/with#chars", input: { n: 1 } },
      { waymark: "child-start", v: 1, workflow: "remote-quick", runId: "x".repeat(129), input: { n: 1 } },
      { waymark: "child-start", v: 2, workflow: "remote-quick", runId: "ok-id", input: { n: 1 } },
      { waymark: "child-cancel", v: 1, runId: "top-level-1", reason: "no parent" },
    ]) {
      expect(await invokePayments(bad), JSON.stringify(bad).slice(0, 80)).toMatchObject({ ok: false, error: { name: "InvalidInputError" } });
    }
    expect(await payments.store.getRun("ok-id")).toBeUndefined();
  });

  it("through the child-entry alias (the parent's only grant) the child's function takes child starts and cancels, nothing else; the function itself is not granted", async () => {
    const asOrders = lambda.asClient("orders");
    const send = async (FunctionName: string, event: unknown) => {
      const out = (await asOrders.send(new InvokeCommand({ FunctionName, InvocationType: "RequestResponse", Payload: new TextEncoder().encode(JSON.stringify(event)) }))) as { Payload?: Uint8Array };
      return JSON.parse(new TextDecoder().decode(out.Payload)) as { ok: boolean; error?: { name: string } };
    };
    await payments.client.start("remote-hold", { runId: "alias-victim", input: {} });
    const before = await payments.client.history("alias-victim");
    const entry = `${LambdaStandIn.arnOf("payments")}:${CHILD_ENTRY_ALIAS}`;
    const fakeBatch = { Records: [{ messageId: "m1", receiptHandle: "r", body: JSON.stringify({ v: 1, kind: "child-end", runId: "alias-victim", waitId: "x", childRunId: "c", outcome: { status: "completed", result: 1 } }), attributes: {}, messageAttributes: {}, md5OfBody: "", eventSource: "aws:sqs", eventSourceARN: "arn", awsRegion: "us-east-1" }] };
    // A child start's fields with a batch or a stream record beside them: judged on the whole
    // event, it is neither (before: dispatched as the batch — a forged child end completed the
    // victim run; as the stream — a forged TTL REMOVE deleted its journal).
    const start = { waymark: "child-start", v: 1, workflow: "remote-hold", runId: "alias-start" };
    const forgedRemove = { eventID: "e1", eventName: "REMOVE", eventSource: "aws:dynamodb", dynamodb: { Keys: { pk: { S: "run#alias-victim" }, sk: { S: "meta" } }, OldImage: { pk: { S: "run#alias-victim" }, sk: { S: "meta" }, createdAt: { N: "0" } } }, userIdentity: { type: "Service", principalId: "dynamodb.amazonaws.com" } };
    const forged = [{ ...start, ...fakeBatch }, { ...start, Records: [forgedRemove] }, { ...start, requestContext: { http: { method: "POST" } }, rawPath: "/runs" }, { waymark: "child-cancel", v: 1, runId: "alias-victim", reason: "x", parent: { runId: "p", waitId: "w", replyTo: "q", extra: 1 } }];
    for (const event of [fakeBatch, { waymark: "watchdog" }, { waymark: "start", runId: "alias-start", input: {} }, ...forged]) {
      expect(await send(entry, event)).toMatchObject({ ok: false, error: { name: "UnsupportedEventError" } });
    }
    expect(await payments.client.history("alias-victim")).toEqual(before);
    expect(await payments.store.getRun("alias-start")).toBeUndefined();
    await expect(send(LambdaStandIn.arnOf("payments"), { waymark: "watchdog" })).rejects.toMatchObject({ name: "AccessDeniedException" });
  });
});
