/**
 * The AI SDK refund agent through the real Lambda handler on the emulators (DynamoDB Local, the
 * SQS emulator; the Scheduler is the stand-in, no local peer exists). A child "Lambda" runs the
 * agent until it asks for approval and mails a signed link; the approver uses the link through
 * the Function URL route; the child wakes, pays the refund and is SIGKILLed right after the
 * payment, before its record. The wake reappears after its visibility timeout, this process's
 * container finishes the run: the refund body runs a second time with the same idempotency key,
 * the provider deduplicates, the customer is paid exactly once, and no recorded model turn is
 * asked again. The model is the AI SDK's mock (`ai/test`), the provider stand-in.
 */
import { spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { refundAgent, type SupportTicket } from "../../functions/refund-agent.ts";
import { FakeRefunds } from "../../functions/services/refunds.ts";
import { FakeShop } from "../../functions/services/shop.ts";
import { supportModelCalls } from "../../functions/services/support-model.ts";
import type { FunctionUrlEvent, FunctionUrlResponse } from "../../lib/aws/lambda-types.ts";
import { ExecutionLog, instrument } from "../crash/instrument.ts";
import { until } from "../support/until.ts";
import { peers } from "./endpoints.ts";
import { lambdaContext } from "./event-source.ts";
import { type E2e, createE2e } from "./harness.ts";
import type { ChildSpec } from "./lambda-child.ts";

const SECRET = "e2e-agent-webhook-secret-0123456789";
const childScript = fileURLToPath(new URL("./agent-child.ts", import.meta.url));
let e2e: E2e;
let demo: string;

beforeAll(async () => {
  // Visibility (3 s) > receive-to-kill + the lease (1.5 s): the redelivered wake finds the dead container's lease expired.
  e2e = await createE2e({
    endpoints: peers(),
    // The harness's own folder (the step ledger's) holds the fakes' files too.
    workflows: (ledger) => [instrument(refundAgent, { log: new ExecutionLog(join(dirname(ledger.file), "demo")), worker: "parent" })],
    visibilityTimeoutS: 3,
    config: { leaseTtlMs: 1_500, webhookSecret: SECRET },
  });
  demo = join(e2e.dir, "demo");
  process.env.WAYMARK_DEMO_DIR = demo;
});
afterAll(() => e2e.close());

function approvalRequest(token: string, payload: unknown): FunctionUrlEvent {
  const path = `/approvals/${token}`;
  return { version: "2.0", rawPath: path, rawQueryString: "", headers: { "content-type": "application/json" }, body: JSON.stringify(payload), isBase64Encoded: false, requestContext: { http: { method: "POST", path } } };
}

describe("the AI SDK refund agent through the Lambda handler, killed right after the payment", () => {
  it("asks for approval with a signed link, pays once across the SIGKILL, and never asks the model a recorded turn again", async () => {
    const runId = "ticket-aws-1";
    const ticket: SupportTicket = { ticketId: "T-7", customerEmail: "kim@example.com", message: "The lamp from order 8472 arrived broken. Can I get a refund?", approverEmail: "ana@shop.test" };
    expect(await e2e.handler({ waymark: "start", runId, input: ticket }, lambdaContext())).toMatchObject({ ok: true, created: true });

    const spec: ChildSpec = { endpoints: peers(), queues: e2e.queues, config: e2e.config, ledgerFile: e2e.ledger.file, clockOffset: e2e.clock.offset };
    const child = spawn(process.execPath, ["--conditions=waymark-source", "--import", "tsx", childScript], { env: { ...process.env, WAYMARK_E2E_CHILD: JSON.stringify(spec), WAYMARK_DEMO_DIR: demo }, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (d: Buffer) => (output += d.toString()));
    child.stderr.on("data", (d: Buffer) => (output += d.toString()));
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once("exit", (_code, signal) => resolve(signal)));
    try {
      await until("the agent to wait for the refund's approval", async () => (await e2e.run(runId)).waitingFor === "signal:refund_approval", 30_000);
      const [mail, ...more] = new FakeShop(demo).approvalMails();
      expect(more).toEqual([]);
      if (!mail) throw new Error("no approval link was mailed");
      expect(mail).toMatchObject({ to: "ana@shop.test", orderId: "8472" });

      const answer = (await e2e.handler(approvalRequest(mail.token, { approved: true, approver: "ana@shop.test" }), lambdaContext())) as FunctionUrlResponse;
      expect(answer.statusCode, answer.body).toBeLessThan(300);
      expect(await exited, output).toBe("SIGKILL");
      expect(new FakeRefunds(demo).refunds()).toHaveLength(1);

      await e2e.mapping().runUntil(e2e.finished([runId]), { what: "this process to finish the run" });
    } finally {
      child.kill("SIGKILL");
    }

    const run = await e2e.run(runId);
    expect(run.status).toBe("completed");
    expect(run.result).toMatchObject({ status: "answered", turns: 3, answer: expect.stringContaining("I have refunded 129.5 for order 8472") });
    expect(new FakeRefunds(demo).refunds(), "the provider's ledger").toMatchObject([{ chargeId: "ch_8472_1", amount: 129.5, idempotencyKey: `${runId}/tool.issue_refund` }]);
    const executions = new ExecutionLog(demo).read();
    const who = (stepId: string) => executions.filter((e) => e.stepId === stepId).map((e) => `${e.worker}:${e.key}`);
    expect(who("tool.issue_refund"), "in the gap: run again, with the same key").toEqual([`child:${runId}/tool.issue_refund`, `parent:${runId}/tool.issue_refund`]);
    expect(who("model")).toEqual([`child:${runId}/model`]);
    expect(who("model#2")).toEqual([`child:${runId}/model#2`]);
    expect(who("model#3")).toEqual([`parent:${runId}/model#3`]);
    expect(supportModelCalls(demo).map((c) => c.turn)).toEqual([1, 2, 3]);
  });
});
