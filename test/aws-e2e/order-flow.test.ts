/**
 * The order workflow end to end on the AWS runtime: started by a direct invocation of the real
 * Lambda handler, driven by the SQS event source loop over the SQS emulator, journaled in
 * DynamoDB Local, approved through the Function URL route (signed), completed. Its 24 h approval
 * timeout is a schedule on the Scheduler STAND-IN (no local peer; see scheduler-stand-in.ts).
 */
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakePayments } from "../../functions/services/payments.ts";
import { FakeShop } from "../../functions/services/shop.ts";
import { Order, orderFlow } from "../../functions/order-flow.ts";
import type { FunctionUrlEvent, FunctionUrlResponse } from "../../lib/aws/lambda-types.ts";
import { signRequest } from "../../lib/http/signing.ts";
import { peers } from "./endpoints.ts";
import { lambdaContext } from "./event-source.ts";
import { type E2e, createE2e } from "./harness.ts";

const SECRET = "e2e-webhook-secret-0123456789abcdef";
let e2e: E2e;

beforeAll(async () => {
  e2e = await createE2e({ endpoints: peers(), workflows: () => [orderFlow], config: { webhookSecret: SECRET } });
  // The fake providers keep their ledgers under this folder (read lazily, at the first step).
  process.env.WAYMARK_DEMO_DIR = join(e2e.dir, "demo");
});
afterAll(() => e2e.close());

const order: Order = { orderId: "8472", sku: "sku-red-mug", quantity: 2, amount: 42.5, email: "ana@example.com", address: "1 Main St" };

/** A signed Function URL request (payload format 2.0), as the function receives it. */
function functionUrlRequest(method: "GET" | "POST", path: string, body = ""): FunctionUrlEvent {
  const headers = { "content-type": "application/json", ...signRequest(SECRET, { method, path, body }, e2e.clock.now()) };
  return { version: "2.0", rawPath: path, rawQueryString: "", headers, body, isBase64Encoded: false, requestContext: { http: { method, path } } };
}

describe("the order workflow through the real Lambda handler", () => {
  it("starts by direct invocation, waits for approval, is approved over the Function URL, and charges once", async () => {
    const runId = "order-8472";
    const started = await e2e.handler({ waymark: "start", runId, input: order }, lambdaContext());
    expect(started).toEqual({ ok: true, runId, created: true, status: "pending" });

    const loop = e2e.mapping();
    await loop.runUntil(async () => (await e2e.run(runId)).waitingFor === "signal:approval", { what: "suspended on the approval" });
    // The 24 h timeout went to the Scheduler (further than SQS can delay), at the wait's deadline.
    const [timeout] = [...e2e.scheduler.schedules.values()];
    expect(e2e.scheduler.schedules.size).toBe(1);
    expect(JSON.parse(timeout?.input.Target?.Input ?? "{}")).toMatchObject({ runId, reason: "timeout", key: "timeout:approval" });
    expect(timeout?.fireAt).toBeGreaterThan(e2e.clock.now() + 23.9 * 3_600_000);

    const path = `/runs/${runId}/signals/approval`;
    const body = JSON.stringify({ payload: { approved: true, approver: "bo" }, signalId: "approval-1" });
    const answer = (await e2e.handler(functionUrlRequest("POST", path, body), lambdaContext())) as FunctionUrlResponse;
    expect(answer.statusCode, answer.body).toBe(202);
    expect(JSON.parse(answer.body)).toMatchObject({ status: "delivered", waitId: "approval" });
    // The wait resolved before its timeout: its schedule is deleted.
    expect(e2e.scheduler.schedules.size).toBe(0);
    expect(e2e.scheduler.calls.map((c) => c.command)).toEqual(["Create", "Delete"]);

    await loop.runUntil(e2e.finished([runId]), { what: "the order to finish" });
    const run = await e2e.run(runId);
    expect(run.status).toBe("completed");
    expect(run.result).toEqual({ status: "shipped", orderId: "8472", chargeId: "ch_8472_1", trackingNumber: "1Z00008472", approvedBy: "bo" });

    const charges = new FakePayments(join(e2e.dir, "demo")).charges();
    expect(charges.map((c) => c.idempotencyKey)).toEqual([`${runId}/charge`]);
    const calls = new FakeShop(join(e2e.dir, "demo")).calls().map((c) => c.key);
    expect(calls).toEqual(["reserve", "fraud_check", "create_label", "notify_customer"].map((s) => `${runId}/${s}`));

    const status = (await e2e.handler(functionUrlRequest("GET", `/runs/${runId}`), lambdaContext())) as FunctionUrlResponse;
    expect(status.statusCode).toBe(200);
    expect(JSON.parse(status.body)).toMatchObject({ runId, status: "completed", pendingWaits: [] });
  });

  it("starting the same order again is idempotent; the same id with another input is refused", async () => {
    const again = await e2e.handler({ waymark: "start", runId: "order-8472", input: order }, lambdaContext());
    expect(again).toEqual({ ok: true, runId: "order-8472", created: false, status: "completed" });
    const other = await e2e.handler({ waymark: "start", runId: "order-8472", input: { ...order, amount: 1 } }, lambdaContext());
    expect(other).toMatchObject({ ok: false, error: { name: "RunConflictError" } });
  });
});
