/**
 * End to end on the local runtime: the order workflow (functions/order-flow.ts) on a SQLite
 * journal, the dev server on 127.0.0.1, real fetch. The wait emails an approval link through
 * the fake shop; an HTTP POST to that link resumes the run. A rejection releases the stock;
 * so does a timeout (on the test runtime's virtual clock, through the same handler).
 */
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DevServer, LocalRuntime } from "waymark/local";
import { createTestRuntime } from "waymark/testing";
import { orderFlow, type Order } from "../../functions/order-flow.ts";
import { FakePayments } from "../../functions/services/payments.ts";
import { FakeShop } from "../../functions/services/shop.ts";
import { main } from "../../lib/cli/main.ts";
import { createHttpHandler } from "../../lib/http/handler.ts";
import { signRequest } from "../../lib/http/signing.ts";
import { SECRET, parseBody, postJson, request, signed, snapshot, startDevLab, stopDevLab, tempDir } from "./helpers.ts";
import { until } from "../support/until.ts";

let dir: string;
let runtime: LocalRuntime;
let server: DevServer;

const order = (id: string, approverEmail?: string): Order => ({
  orderId: id,
  sku: "LAMP-01",
  quantity: 1,
  amount: 129.5,
  email: "kim@example.com",
  address: "1 Harbour St",
  ...(approverEmail ? { approverEmail } : {}),
});

async function call(method: string, path: string, body?: unknown, init: { sign?: boolean } = { sign: true }) {
  const text = body === undefined ? "" : JSON.stringify(body);
  const headers: Record<string, string> = { ...(text ? { "content-type": "application/json" } : {}) };
  if (init.sign) Object.assign(headers, signRequest(SECRET, { method, path, body: text }));
  const res = await fetch(`${server.url}${path}`, { method, headers, ...(text ? { body: text } : {}) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> & { error?: { name: string; decision?: unknown } } };
}

const mailFor = (orderId: string) =>
  until(`the approval mail of order ${orderId}`, () => new FakeShop(dir).approvalMails().find((m) => m.orderId === orderId));

beforeAll(async () => {
  dir = tempDir("waymark-e2e-");
  process.env.WAYMARK_DEMO_DIR = dir;
  ({ runtime, server } = await startDevLab({ workflows: [orderFlow], file: join(dir, "journal.db") }));
});

afterAll(() => stopDevLab({ runtime, server }));

describe("approving a waiting order through its link (local runtime + dev server)", () => {
  it("an approval POSTed to the emailed link resumes the run, which charges once and ships", async () => {
    expect(await call("POST", "/runs", { workflow: "order-flow", runId: "order-1", input: order("1", "boss@shop.test") })).toMatchObject({ status: 201 });
    const mail = await mailFor("1");
    expect(mail.to).toBe("boss@shop.test");
    expect(mail.url).toMatch(new RegExp(`^${server.url}/approvals/[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]{43}$`));
    const url = mail.url as string;

    const status = await call("GET", "/runs/order-1");
    expect(status.body).toMatchObject({ status: "suspended", pendingWaits: [{ waitId: "approval", signal: "approval" }] });
    const link = await fetch(url);
    expect(await link.json()).toMatchObject({ runId: "order-1", waitId: "approval", open: true, expiresAt: mail.expiresAt });

    const approve = (payload: unknown) => fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(payload) });
    const ok = await approve({ approved: true, approver: "boss@shop.test", note: "fine" });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({ runId: "order-1", status: "delivered", waitId: "approval" });
    const run = await runtime.waitForRun("order-1");
    expect(run).toMatchObject({ status: "completed", result: { status: "shipped", approvedBy: "boss@shop.test" } });
    expect(new FakePayments(dir).charges().filter((c) => c.orderId === "1")).toHaveLength(1);

    // The same POST again (a retried delivery) is the same answer; another body is refused with the decision.
    expect((await approve({ approved: true, approver: "boss@shop.test", note: "fine" })).status).toBe(200);
    const before = await snapshot(runtime.client);
    const again = await approve({ approved: false, approver: "mallory" });
    expect(again.status).toBe(409);
    expect(await again.json()).toMatchObject({ error: { name: "WaitResolvedError", decision: { via: "signal" } } });
    expect(await snapshot(runtime.client)).toBe(before);
    expect((await (await fetch(url)).json()) as object).toMatchObject({ open: false, runStatus: "completed" });
  });

  it("a rejection through the link runs the compensation: the reservation is released, nothing charged", async () => {
    await call("POST", "/runs", { workflow: "order-flow", runId: "order-2", input: order("2", "boss@shop.test") });
    const { url } = await mailFor("2");
    const res = await fetch(url as string, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ approved: false, approver: "boss@shop.test", note: "address looks wrong" }) });
    expect(res.status).toBe(200);
    expect(await runtime.waitForRun("order-2")).toMatchObject({ status: "completed", result: { status: "rejected" } });
    const calls = new FakeShop(dir).calls().filter((c) => c.key.startsWith("order-2/"));
    expect(calls.map((c) => `${c.service}.${c.op}`)).toEqual(["inventory.reserve", "fraud.score", "mailer.approval_request", "inventory.release"]);
    expect(new FakePayments(dir).charges().filter((c) => c.orderId === "2")).toHaveLength(0);
  });

  it("`waymark approve <url>` and `waymark signal --url` do the same from a shell", async () => {
    await call("POST", "/runs", { workflow: "order-flow", runId: "order-3", input: order("3", "boss@shop.test") });
    const { url } = await mailFor("3");
    const out: string[] = [];
    const err: string[] = [];
    const cli = (...argv: string[]) => main(argv, (l) => out.push(l), (l) => err.push(l));
    expect(await cli("approve", url as string, "--payload", '{"approved":true,"approver":"cli@shop.test"}')).toBe(0);
    expect(JSON.parse(out.at(-1) as string)).toMatchObject({ status: "delivered", waitId: "approval" });
    expect(await runtime.waitForRun("order-3")).toMatchObject({ result: { status: "shipped", approvedBy: "cli@shop.test" } });
    expect(await cli("approve", url as string, "--payload", '{"approved":false,"approver":"late@shop.test"}')).toBe(1);
    expect(err.at(-1)).toMatch(/HTTP 409 WaitResolvedError/);

    // An order without an approver gets no link: a system signals it, signed with the shared secret.
    await call("POST", "/runs", { workflow: "order-flow", runId: "order-4", input: order("4") });
    await until("order-4 to wait", async () => ((await runtime.client.get("order-4")).status === "suspended" ? true : undefined));
    process.env.E2E_WEBHOOK_SECRET = SECRET;
    const args = ["signal", "order-4", "approval", "--payload", '{"approved":true,"approver":"ops"}', "--signal-id", "ops-4", "--url", server.url, "--secret-env", "E2E_WEBHOOK_SECRET"];
    expect(await cli(...args)).toBe(0);
    expect(JSON.parse(out.at(-1) as string)).toEqual({ signalId: "ops-4", status: "delivered", waitId: "approval" });
    expect(await cli(...args)).toBe(0); // the same signal id again: one signal
    expect(await runtime.waitForRun("order-4")).toMatchObject({ result: { status: "shipped", approvedBy: "ops" } });
    expect(await cli("signal", "order-4", "approval", "--payload", "{", "--url", server.url)).toBe(2);
    expect(await cli("signal", "order-4", "approval", "--payload", "{}", "--url", server.url, "--secret-env", "E2E_UNSET_SECRET")).toBe(2);
  });
});

describe("the order's approval link after its timeout (test runtime, virtual clock)", () => {
  it("the wait times out, the reservation is released, and the link answers 410 without writing", async () => {
    const rt = createTestRuntime({ workflows: [orderFlow], webhook: { secret: SECRET, baseUrl: "https://hooks.example" } });
    const handler = createHttpHandler({ client: rt.client, secret: SECRET, clock: rt.clock });
    expect((await handler(signed("POST", "/runs", { workflow: "order-flow", runId: "order-5", input: order("5", "boss@shop.test") }, rt.clock.now()))).status).toBe(201);
    await rt.settle();
    const mail = await mailFor("5");
    const path = new URL(mail.url as string).pathname;
    rt.clock.advance(24 * 3600_000 - 1);
    expect(parseBody(await handler(request("GET", path)))).toMatchObject({ open: true });
    await rt.advance("1ms"); // nobody approved: the wait times out
    expect((await rt.get("order-5")).result).toMatchObject({ status: "expired" });
    expect(new FakeShop(dir).calls().filter((c) => c.key === "order-5/release")).toHaveLength(1);
    const before = await snapshot(rt.client);
    const late = await handler(postJson(path, { approved: true, approver: "boss@shop.test" }));
    expect({ status: late.status, name: parseBody(late).error?.name }).toEqual({ status: 410, name: "LinkExpiredError" });
    expect(await snapshot(rt.client)).toBe(before);
  });
});
