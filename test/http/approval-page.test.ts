/**
 * Issue 12 item 1 at the handler: an approval link opened by a browser is a page (summary,
 * deadline, a form from the signal's schema or approve / reject buttons), its form posts with a
 * form token and a same-origin check, refusals are pages, and API clients get the JSON as
 * before. The browser test (test/ui/approver.test.ts) drives the same page in Chromium.
 */
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { type AnyWorkflow, durable } from "waymark";
import { createLocalRuntime, type LocalRuntime } from "waymark/local";
import { handleFunctionUrl } from "../../lib/aws/function-url.ts";
import type { ApprovalLink } from "../../lib/core/definition.ts";
import type { StandardSchemaV1 } from "../../lib/core/standard-schema.ts";
import { createHttpHandler } from "../../lib/http/handler.ts";
import type { HttpHandler, HttpRequest } from "../../lib/http/types.ts";
import { Approval, SECRET, request, snapshot, tempDir } from "./helpers.ts";
import { until } from "../support/until.ts";

const links = new Map<string, ApprovalLink>();
const Order = z.object({ id: z.string(), amount: z.number() }).strict();

const approveOrder = durable({ name: "approve-order", input: Order, signals: { approval: Approval } }, async (order, step) => {
  const d = await step.waitForSignal("approval", { timeout: "1h", summary: `Order ${order.id} for ${order.amount} EUR`, notify: (l) => void links.set(l.runId, l) });
  return d.received ? { approved: d.payload.approved, note: d.payload.note ?? null } : "timeout";
});

/** A Standard Schema with no JSON Schema to derive: the page falls back to buttons. */
const opaque: StandardSchemaV1<unknown, { approved: boolean }> = {
  "~standard": { version: 1, vendor: "hand-made", validate: (v) => (typeof v === "object" && v !== null && typeof (v as { approved?: unknown }).approved === "boolean" ? { value: v as { approved: boolean } } : { issues: [{ message: "approved must be a boolean" }] }) },
};
const opaqueFlow = durable({ name: "opaque-flow", input: z.object({}).strict(), signals: { ok: opaque } }, async (_in, step) => {
  const d = await step.waitForSignal("ok", { notify: (l) => void links.set(l.runId, l) });
  return d.received ? d.payload.approved : "timeout";
});

let runtime: LocalRuntime;
let handler: HttpHandler;

const path = (runId: string) => new URL(links.get(runId)?.url ?? "http://x/none").pathname;
const browser = (p: string, init: { method?: string; body?: string; headers?: Record<string, string> } = {}): HttpRequest =>
  request(init.method ?? "GET", p, { headers: { accept: "text/html,application/xhtml+xml,*/*;q=0.8", host: "wm.test", ...(init.body === undefined ? {} : { "content-type": "application/x-www-form-urlencoded", "sec-fetch-site": "same-origin" }), ...init.headers }, ...(init.body === undefined ? {} : { body: init.body }) });
const csrfOf = (page: string) => /name="_csrf" value="([^"]+)"/.exec(page)?.[1] ?? "";

async function startAndWait(runId: string, workflow: AnyWorkflow, input: unknown): Promise<void> {
  await runtime.client.start(workflow, { runId, input });
  await until(`${runId}'s link`, () => links.has(runId));
  await until(`${runId} to suspend`, async () => (await runtime.client.get(runId)).status === "suspended");
}

beforeAll(async () => {
  runtime = createLocalRuntime({ workflows: [approveOrder, opaqueFlow], file: join(tempDir(), "journal.db"), webhook: { secret: SECRET, baseUrl: "http://wm.test" } });
  runtime.start();
  handler = createHttpHandler({ client: runtime.client, secret: SECRET });
  await startAndWait("p-1", approveOrder, { id: `<script>alert("x")</script>`, amount: 12.5 });
  await startAndWait("p-2", approveOrder, { id: "A-2", amount: 3 });
  await startAndWait("p-3", opaqueFlow, {});
});

afterAll(async () => {
  await runtime.close();
});

describe("the approver's page", () => {
  it("shows the workflow's summary (escaped), the deadline and a form from the schema, under a strict CSP", async () => {
    const res = await handler(browser(path("p-1")));
    expect(res.status).toBe(200);
    expect(res.headers["content-type"]).toMatch(/^text\/html/);
    expect(res.headers["content-security-policy"]).toContain("default-src 'none'");
    expect(res.headers["content-security-policy"]).toContain("frame-ancestors 'none'");
    expect(res.body).toContain("Order &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; for 12.5 EUR");
    expect(res.body).not.toContain("<script>alert");
    expect(res.body).toMatch(/Answer by<\/dt><dd><time datetime="[^"]+Z">/);
    expect(res.body).toContain('name="f.approved" value="true">Approve</button>');
    expect(res.body).toContain('name="f.approved" value="false">Reject</button>');
    expect(res.body).toMatch(/<input type="text"[^>]*name="f.approver" required/);
    expect(res.body).toMatch(/<textarea id="f-note" name="f.note" maxlength="500">/);
    expect(csrfOf(res.body)).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it("keeps the JSON answers for API clients", async () => {
    for (const accept of [undefined, "application/json", "*/*"]) {
      const res = await handler(request("GET", path("p-1"), { headers: accept ? { accept } : {} }));
      expect(res.headers["content-type"]).toMatch(/^application\/json/);
      expect(JSON.parse(res.body)).toMatchObject({ runId: "p-1", waitId: "approval", signal: "approval", open: true });
    }
  });

  it("refuses a cross-site post and a post without the page's form token, writing nothing", async () => {
    const csrf = csrfOf((await handler(browser(path("p-1")))).body);
    const before = await snapshot(runtime.client);
    const body = `_csrf=${csrf}&f.approved=true&f.approver=ana`;
    for (const req of [
      browser(path("p-1"), { method: "POST", body, headers: { "sec-fetch-site": "cross-site" } }),
      browser(path("p-1"), { method: "POST", body: body.replace(csrf, "x".repeat(43)) }),
      browser(path("p-1"), { method: "POST", body: "f.approved=true&f.approver=ana" }),
      { ...browser(path("p-1"), { method: "POST", body, headers: { origin: "https://evil.example" } }), headers: { "content-type": "application/x-www-form-urlencoded", origin: "https://evil.example", host: "wm.test" } },
    ]) {
      const res = await handler(req);
      expect(res.status).toBe(403);
      expect(res.body).toContain("<h1>Not accepted</h1>");
    }
    expect(await snapshot(runtime.client)).toBe(before);
  });

  it("shows the schema's complaint next to the field and keeps what was typed", async () => {
    const csrf = csrfOf((await handler(browser(path("p-1")))).body);
    const before = await snapshot(runtime.client);
    const res = await handler(browser(path("p-1"), { method: "POST", body: `_csrf=${csrf}&f.approved=true&f.approver=&f.note=hello` }));
    expect(res.status).toBe(422);
    expect(res.body).toMatch(/id="f-approver-error"/);
    expect(res.body).toMatch(/<textarea[^>]*>hello<\/textarea>/);
    expect(await snapshot(runtime.client)).toBe(before);
  });

  it("approves from the form, resumes the run, and shows the recorded answer ever after", async () => {
    const csrf = csrfOf((await handler(browser(path("p-2")))).body);
    const res = await handler(browser(path("p-2"), { method: "POST", body: `_csrf=${csrf}&f.approved=true&f.approver=ana&f.note=looks+fine` }));
    expect(res.status).toBe(200);
    expect(res.body).toContain("<h1>Approved</h1>");
    expect((await runtime.waitForRun("p-2")).result).toEqual({ approved: true, note: "looks fine" });
    const again = await handler(browser(path("p-2")));
    expect(again.body).toContain("<h1>Approved</h1>");
    expect(again.body).not.toContain("<form");
    // The same form posted again (a refresh) is the same signal: no second decision, no error.
    const repost = await handler(browser(path("p-2"), { method: "POST", body: `_csrf=${csrf}&f.approved=true&f.approver=ana&f.note=looks+fine` }));
    expect(repost.body).toContain("<h1>Approved</h1>");
  });

  it("falls back to approve / reject when the schema gives no JSON Schema", async () => {
    const page = await handler(browser(path("p-3")));
    expect(page.body).toContain(">Approve</button>");
    expect(page.body).not.toContain("<input type=\"text\"");
    const res = await handler(browser(path("p-3"), { method: "POST", body: `_csrf=${csrfOf(page.body)}&f.approved=false` }));
    expect(res.body).toContain("<h1>Rejected</h1>");
    expect((await runtime.waitForRun("p-3")).result).toBe(false);
  });

  it("a forged link, an expired link and a closed request each get a clear page", async () => {
    const forged = await handler(browser(path("p-1").slice(0, -3) + "AAA"));
    expect(forged.status).toBe(404);
    expect(forged.body).toContain("This link is not valid");
    const later = createHttpHandler({ client: runtime.client, secret: SECRET, clock: { now: () => Date.now() + 2 * 3_600_000 } });
    const expired = await later(browser(path("p-1")));
    expect(expired.status).toBe(410);
    expect(expired.body).toContain("This link has expired");
    await runtime.client.cancel("p-1");
    await runtime.waitForRun("p-1", { timeoutMs: 120_000 });
    const ended = await handler(browser(path("p-1")));
    expect(ended.status).toBe(410);
    expect(ended.body).toContain("Nothing left to decide");
  });

  it("is served by the Function URL entry too", async () => {
    const res = await handleFunctionUrl(handler, { version: "2.0", rawPath: path("p-2"), headers: { Accept: "text/html" }, requestContext: { http: { method: "GET" } } });
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toMatch(/^text\/html/);
    expect(res.body).toContain("<h1>Approved</h1>");
  });
});
