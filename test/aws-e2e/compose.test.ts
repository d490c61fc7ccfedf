/**
 * The second wave's compositions end to end on the AWS runtime: the real Lambda handler fed by
 * the SQS event source loop over the SQS emulator, journaled in DynamoDB Local; schedules past
 * 15 minutes on the Scheduler STAND-IN (no local peer; see scheduler-stand-in.ts).
 *
 *   cancellation   of a run waiting for approval (compensation once, a late approval 409 through
 *                  the Function URL), of a run inside a step body (its signal aborts, its late
 *                  result is not a success), and by the whole-run `timeout`
 *   step.map       100 items, concurrency 10, suspended mid-map, every wake delivered twice
 *   step.invoke    a child in the same function; the parent is woken by the child's end only
 *   continueAsNew  three incarnations, each journal in its own partition of the one table
 */
import { QueryCommand } from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FunctionUrlEvent, FunctionUrlResponse } from "../../lib/aws/lambda-types.ts";
import type { AwsRuntimeConfig } from "../../lib/aws/config.ts";
import { parseWakeMessage } from "../../lib/aws/wake-message.ts";
import { signRequest } from "../../lib/http/signing.ts";
import { peers } from "./endpoints.ts";
import { lambdaContext } from "./event-source.ts";
import { type E2e, createE2e } from "./harness.ts";
import { BodyProbe, composeWorkflows } from "./workflows.ts";

const SECRET = "e2e-webhook-secret-0123456789abcdef";

/** A fresh table and queue for one describe block, hosting every compose workflow in one function. */
function freshHarness(config: Partial<AwsRuntimeConfig> = {}): { e2e: () => E2e; probe: () => BodyProbe } {
  let e2e: E2e | undefined;
  let probe: BodyProbe | undefined;
  beforeAll(async () => {
    const p = new BodyProbe();
    probe = p;
    e2e = await createE2e({ endpoints: peers(), workflows: (ledger) => composeWorkflows(ledger, p).all, config: { webhookSecret: SECRET, ...config } });
  });
  afterAll(() => e2e?.close());
  return { e2e: () => e2e as E2e, probe: () => probe as BodyProbe };
}

/** A signed Function URL request (payload format 2.0), as the function receives it. */
function functionUrlRequest(e2e: E2e, method: "GET" | "POST", path: string, body = ""): FunctionUrlEvent {
  const headers = { "content-type": "application/json", ...signRequest(SECRET, { method, path, body }, e2e.clock.now()) };
  return { version: "2.0", rawPath: path, rawQueryString: "", headers, body, isBase64Encoded: false, requestContext: { http: { method, path } } };
}

/** The wake messages sent for one run, by reason. */
function wakeReasons(e2e: E2e, runId: string): string[] {
  return e2e.sent.map((m) => parseWakeMessage(m.body)).filter((w) => w.runId === runId).map((w) => w.reason);
}

const HOUR = 3_600_000;

describe("cancelling a run that waits for approval", () => {
  const h = freshHarness();

  it("the wait throws CancelledError, the release runs once, the run ends cancelled with the reason, a late approval is a 409", async () => {
    const e2e = h.e2e();
    const runId = "cancel-wait-1";
    await e2e.client.start("approval-saga", { runId, input: { sku: "mug" } });
    const loop = e2e.mapping({ duplicate: true });
    await loop.runUntil(async () => (await e2e.run(runId)).waitingFor === "signal:approval", { what: "suspended on the approval" });

    expect((await e2e.client.cancel(runId, { reason: "customer withdrew" })).outcome).toBe("requested");
    await loop.runUntil(e2e.finished([runId]), { what: "the cancelled run to end" });

    const run = await e2e.run(runId);
    expect(run).toMatchObject({ status: "cancelled", error: { name: "CancelledError", fields: { reason: "customer withdrew" } } });
    expect(Object.fromEntries(e2e.ledger.counts(runId))).toEqual({ [`${runId}/reserve`]: 1, [`${runId}/release`]: 1 });
    const history = (await e2e.client.history(runId)).entries;
    expect(history.find((e) => e.key === "resolution#approval")?.record).toMatchObject({ via: "cancelled" });
    expect(history.find((e) => e.key === "step#release")?.record).toMatchObject({ status: "ok", result: "released hold-mug" });
    expect(wakeReasons(e2e, runId)).toContain("cancel");

    // The approver is too late: the Function URL answers 409 with the wait's decision.
    const path = `/runs/${runId}/signals/approval`;
    const body = JSON.stringify({ payload: { approved: true, approver: "bo" }, signalId: "late-approval" });
    const answer = (await e2e.handler(functionUrlRequest(e2e, "POST", path, body), lambdaContext())) as FunctionUrlResponse;
    expect(answer.statusCode, answer.body).toBe(409);
    expect(JSON.parse(answer.body)).toMatchObject({ error: { name: "WaitResolvedError", decision: { via: "cancelled" } } });
    expect((await e2e.run(runId)).status).toBe("cancelled");
    expect(e2e.ledger.counts(runId).get(`${runId}/charge`)).toBeUndefined();
  });

  it("cancelling it again keeps the first reason's outcome and reports the run as finished", async () => {
    const e2e = h.e2e();
    expect((await e2e.client.cancel("cancel-wait-1", { reason: "again" })).outcome).toBe("already-ended");
    expect((await e2e.run("cancel-wait-1")).error).toMatchObject({ fields: { reason: "customer withdrew" } });
  });
});

describe("cancelling a run while a step body runs", () => {
  // A short lease: the heartbeat (every third of it) is what notices the request mid-step.
  const h = freshHarness({ leaseTtlMs: 1_500 });

  it("the body's signal aborts, its late result is not recorded as success, the compensation runs once", async () => {
    const e2e = h.e2e();
    const probe = h.probe();
    const runId = "cancel-step-1";
    await e2e.client.start("long-export", { runId, input: { maxMs: 8_000 } });
    const loop = e2e.mapping();
    const driving = loop.runUntil(e2e.finished([runId]), { what: "the cancelled run to end", deadlineMs: 20_000 });

    const began = Date.now();
    while (probe.exportSignals.length === 0 && Date.now() - began < 10_000) await new Promise((r) => setTimeout(r, 20));
    expect(probe.exportSignals, "the export body started").toHaveLength(1);
    const requested = Date.now();
    expect((await e2e.client.cancel(runId, { reason: "operator stop" })).outcome).toBe("requested");
    await driving;

    expect(probe.exportSignals[0]?.aborted).toBe(true);
    expect(probe.exportAbortedAt, "the body saw its signal abort").toBeDefined();
    // Noticed by a heartbeat (500 ms apart), not by the body's own 8 s limit.
    expect((probe.exportAbortedAt ?? Infinity) - requested).toBeLessThan(3_000);
    const run = await e2e.run(runId);
    expect(run).toMatchObject({ status: "cancelled", error: { name: "CancelledError", fields: { reason: "operator stop" } } });
    const history = (await e2e.client.history(runId)).entries;
    expect(history.find((e) => e.key === "step#export")?.record).toMatchObject({ status: "failed", error: { name: "CancelledError" } });
    expect(Object.fromEntries(e2e.ledger.counts(runId))).toEqual({ [`${runId}/export`]: 1, [`${runId}/cleanup`]: 1 });
    // The body's late result (200 ms after the abort) changes nothing.
    await new Promise((r) => setTimeout(r, 300));
    expect((await e2e.client.history(runId)).entries.find((e) => e.key === "step#export")?.record).toMatchObject({ status: "failed" });
  });
});

describe("the whole-run timeout", () => {
  const h = freshHarness();

  it("a run past durable({ timeout: '2h' }) is woken by its deadline schedule, compensates and ends cancelled", async () => {
    const e2e = h.e2e();
    const runId = "deadline-1";
    const createdAt = e2e.clock.now();
    await e2e.client.start("deadline-flow", { runId, input: {} });
    const loop = e2e.mapping();
    await loop.runUntil(async () => (await e2e.run(runId)).status === "suspended", { what: "suspended on the approval" });
    const suspended = await e2e.run(runId);
    expect(suspended.waitingFor, "its only timed wake is the run's deadline").toBe("run timeout");
    // Further than SQS can delay: a schedule on the stand-in, at the deadline.
    const deadlines = [...e2e.scheduler.schedules.values()].filter((s) => JSON.parse(s.input.Target?.Input ?? "{}").runId === runId);
    expect(deadlines).toHaveLength(1);
    expect(deadlines[0]?.fireAt).toBeGreaterThanOrEqual(createdAt + 2 * HOUR - 1_000);

    await e2e.advance(2 * HOUR + 1_000);
    await loop.runUntil(e2e.finished([runId]), { what: "the run to be cancelled by its deadline" });
    const run = await e2e.run(runId);
    expect(run).toMatchObject({ status: "cancelled", error: { name: "CancelledError" } });
    expect(run.error?.message).toMatch(/timeout/);
    expect(Object.fromEntries(e2e.ledger.counts(runId))).toEqual({ [`${runId}/reserve`]: 1, [`${runId}/release`]: 1 });
    const history = (await e2e.client.history(runId)).entries;
    expect(history.find((e) => e.key === "cancel")?.record).toMatchObject({ reason: expect.stringMatching(/timeout/) });
  });
});

describe("step.map over 100 items, concurrency 10, every wake delivered twice", () => {
  const h = freshHarness();

  it("never more than 10 bodies at once, every item executed once (the retried one twice), results in order", async () => {
    const e2e = h.e2e();
    const probe = h.probe();
    const runId = "map-1";
    await e2e.client.start("fan-out", { runId, input: { n: 100, concurrency: 10, holdMs: 15, retryIndex: 37 } });
    const loop = e2e.mapping({ duplicate: true });
    await loop.runUntil(e2e.finished([runId]), { what: "the map to finish", pollers: 2 });

    const run = await e2e.run(runId);
    const sum = Array.from({ length: 100 }, (_, i) => i * i).reduce((a, b) => a + b, 0);
    expect(run).toMatchObject({ status: "completed", result: { count: 100, sum, ordered: true } });
    expect(probe.maxRunning, "the bound, measured by the bodies").toBe(10);

    const executions = e2e.ledger.read().filter((x) => x.key.startsWith(`${runId}/`));
    const attempts = new Map<string, number[]>();
    for (const x of executions) attempts.set(x.key, [...(attempts.get(x.key) ?? []), x.attempt]);
    expect(attempts.size).toBe(100);
    for (let i = 0; i < 100; i++) expect(attempts.get(`${runId}/item[${i}]/square`), `item ${i}`).toEqual(i === 37 ? [1, 2] : [1]);

    // It really suspended mid-map, its retry scheduled as a wake; every wake was delivered twice.
    // (The loop sends a wake's copy when it receives the wake. On a busy machine the start's copy
    // can come after the retry's time, within the grant's due margin, and run the retry first:
    // the run then ends before the retry's own wake is received, and that wake has no copy yet.)
    const reasons = wakeReasons(e2e, runId);
    expect(e2e.lines("wake", runId).some((l) => l.outcome === "suspended")).toBe(true);
    expect(reasons.filter((r) => r === "retry").length).toBeGreaterThanOrEqual(1);
    expect(reasons.filter((r) => r === "start")).toHaveLength(2);
    expect(e2e.lines("wake", runId).some((l) => l.outcome === "duplicate-in-batch")).toBe(true);
  });
});

describe("a parent invoking a child in the same function", () => {
  const h = freshHarness();

  it("the child's result comes back, there is exactly one child run, and the parent is woken by the child's end alone", async () => {
    const e2e = h.e2e();
    const runId = "parent-1";
    await e2e.client.start("parent-order", { runId, input: { amount: 42 } });
    const loop = e2e.mapping();
    await loop.runUntil(e2e.finished([runId]), { what: "the parent to finish" });

    const run = await e2e.run(runId);
    expect(run).toMatchObject({ status: "completed", result: { charge: "ch-42" } });
    const children = (await e2e.client.list({})).runs.filter((r) => r.workflow === "child-pay");
    expect(children.map((r) => [r.runId, r.status])).toEqual([["parent-1:pay", "completed"]]);

    // Two invocations of the parent: the start, then the child's end (a signal). No polling
    // wakes while the child slept its 1 s.
    expect(run.invocations).toBe(2);
    expect(e2e.lines("invocation", runId).map((l) => l.outcome)).toEqual(["suspended", "completed"]);
    expect(wakeReasons(e2e, runId)).toEqual(["start", "signal"]);
    const history = (await e2e.client.history(runId)).entries;
    expect(history.find((e) => e.key === "signal#child:parent-1:pay")?.record).toMatchObject({ name: "__child", payload: { status: "completed", result: "ch-42" } });

    expect(Object.fromEntries(e2e.ledger.counts())).toEqual({
      "parent-1/before": 1,
      "parent-1/after": 1,
      "parent-1:pay/authorize": 1,
      "parent-1:pay/capture": 1,
    });
  });

  it("with every wake delivered twice, still one child run and every body once", async () => {
    const e2e = h.e2e();
    const runIds = ["parent-2", "parent-3", "parent-4"];
    for (const [i, runId] of runIds.entries()) await e2e.client.start("parent-order", { runId, input: { amount: i } });
    await e2e.mapping({ duplicate: true }).runUntil(e2e.finished(runIds), { what: "the parents to finish", pollers: 2 });
    for (const [i, runId] of runIds.entries()) expect(await e2e.run(runId), runId).toMatchObject({ status: "completed", result: { charge: `ch-${i}` } });
    const children = (await e2e.client.list({})).runs.filter((r) => r.workflow === "child-pay" && r.runId !== "parent-1:pay");
    expect(children.map((r) => r.runId).sort()).toEqual(runIds.map((id) => `${id}:pay`));
    expect(e2e.ledger.repeated(), "keys executed more than once").toEqual([]);
    expect(e2e.ledger.read().length).toBe(4 * 4);
  });
});

describe("continueAsNew across incarnations", () => {
  const h = freshHarness();

  it("three incarnations, each journal under <runId>~<k> in the table, the run completes with every step once", async () => {
    const e2e = h.e2e();
    const runId = "paged-1";
    await e2e.client.start("paged", { runId, input: { from: 0, to: 12, per: 5, napAt: 5 } });
    await e2e.mapping({ duplicate: true }).runUntil(e2e.finished([runId]), { what: "the last incarnation to finish", pollers: 2 });

    const run = await e2e.run(runId);
    expect(run).toMatchObject({ status: "completed", incarnation: 3, result: { sum: 66 }, input: { from: 10, to: 12, per: 5, total: 45 } });

    // Each incarnation's records, read straight from the table by partition key.
    const stepKeys = async (pk: string) => {
      const out = await e2e.clients.dynamodb.send(new QueryCommand({ TableName: e2e.tableName, KeyConditionExpression: "pk = :pk", ExpressionAttributeValues: { ":pk": { S: pk } }, ConsistentRead: true }));
      return (out.Items ?? []).map((i) => i.sk?.S ?? "").filter((sk) => sk.startsWith("step#")).sort();
    };
    const adds = (n: number) => ["step#add", ...Array.from({ length: n - 1 }, (_, i) => `step#add#${i + 2}`)].sort();
    expect(await stepKeys(`run#${runId}`)).toEqual(adds(5));
    expect(await stepKeys(`run#${runId}~2`)).toEqual([...adds(5), "step#nap"].sort());
    expect(await stepKeys(`run#${runId}~3`)).toEqual(adds(2));
    expect(await stepKeys(`run#${runId}~4`)).toEqual([]);

    // Every step body once, under its incarnation's idempotency key.
    expect(e2e.ledger.repeated(), "keys executed more than once").toEqual([]);
    const keys = [...e2e.ledger.counts(runId).keys(), ...e2e.ledger.counts(`${runId}~2`).keys(), ...e2e.ledger.counts(`${runId}~3`).keys()];
    expect(keys).toHaveLength(12);
    expect(e2e.lines("continued", runId).map((l) => l.incarnation)).toEqual([2, 3]);
  });
});
