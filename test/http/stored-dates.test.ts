/**
 * Issue 17: no page or handler answers 500 for a stored date. A wait whose timeout came from
 * input (8.64e15 ms from now) or any time beyond JavaScript's date range is a number a journal
 * can hold; the dashboard's pages, the approver's page and its form post, and the CLI timeline
 * show it as "invalid date" — and the form post that records an approval answers with the
 * decision, recorded once. The journals are written straight into the store, as a run whose
 * engine accepted such a timeout (or another writer) left them.
 */
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { durable } from "waymark";
import { createLocalRuntime, formatTimeline, type LocalRuntime } from "waymark/local";
import { linkFormToken } from "../../lib/http/form-guard.ts";
import { createHttpHandler } from "../../lib/http/handler.ts";
import { createApprovalLinks } from "../../lib/http/tokens.ts";
import type { HttpHandler } from "../../lib/http/types.ts";
import { createDashboard, type Dashboard } from "../../lib/local/dashboard.ts";
import { Approval, SECRET, request, tempDir } from "./helpers.ts";

const deadline = durable({ name: "deadline", input: z.object({}).strict(), signals: { approval: Approval } }, async (_in, step) => {
  const d = await step.waitForSignal("approval", { timeout: 8.64e15 });
  return d.received ? d.payload.approver : "none";
});

const BEYOND = 8.64e15 + 1;
let runtime: LocalRuntime;
let dashboard: Dashboard;
let handler: HttpHandler;
let t0 = 0;

/** A run with these records, released as the engine would leave it (`now` may itself be out of range). */
async function journal(runId: string, records: Array<Record<string, unknown>>, release: { now: number; wakeAt?: number; waitingFor?: string }): Promise<void> {
  await runtime.store.createRun({ runId, workflow: deadline.key, input: {}, createdAt: t0 });
  const grant = await runtime.store.acquireLease(runId, { owner: "test", now: t0, ttlMs: 60_000 });
  if (!grant.acquired) throw new Error(`${runId}: no lease`);
  for (const body of records) {
    const key = body.type === "attempt" ? `attempt#${String(body.stepId)}#${String(body.attempt)}` : `${String(body.type)}#${String(body.stepId)}`;
    const put = await runtime.store.appendRecord(runId, { key, body: { v: 1, ...body } });
    if (!put.written) throw new Error(`${runId}: ${key} not written`);
  }
  await runtime.store.releaseLease(runId, grant.lease.token, { status: "suspended", ...release });
}

const get = async (path: string) => (await dashboard({ method: "GET", path, query: {}, headers: {}, body: "" }))!;
const page = (p: string, init: { body?: string } = {}) =>
  request(init.body === undefined ? "GET" : "POST", p, { headers: { accept: "text/html", host: "wm.test", ...(init.body === undefined ? {} : { "content-type": "application/x-www-form-urlencoded", "sec-fetch-site": "same-origin" }) }, ...(init.body === undefined ? {} : { body: init.body }) });

beforeAll(async () => {
  // Not started: nothing executes these runs; the pages read exactly what was written.
  runtime = createLocalRuntime({ workflows: [deadline], file: join(tempDir(), "journal.db") });
  dashboard = createDashboard({ client: runtime.client });
  handler = createHttpHandler({ client: runtime.client, secret: SECRET });
  t0 = Date.now();
  await journal("far-wait", [{ type: "step", kind: "wait", stepId: "approval", signal: "approval", timeoutAt: t0 + 8.64e15, at: t0 }], { now: t0, wakeAt: t0 + 8.64e15, waitingFor: "signal:approval" });
  await journal(
    "far-everything",
    [
      { type: "step", kind: "run", stepId: "early", status: "ok", result: 1, attempts: 1, startedAt: -BEYOND, at: t0 },
      { type: "attempt", stepId: "flaky", attempt: 1, error: { name: "Error", message: "boom" }, retryAt: 1e300, startedAt: t0, at: t0 + 1 },
      { type: "step", kind: "sleep", stepId: "nap", wakeAt: BEYOND, at: t0 + 2 },
      { type: "step", kind: "wait", stepId: "approval", signal: "approval", timeoutAt: -1e300, at: t0 + 3 },
    ],
    { now: BEYOND, wakeAt: 1e300, waitingFor: "signal:approval" },
  );
});

afterAll(async () => {
  await runtime.close();
});

describe("a stored date beyond JavaScript's range", () => {
  it("the dashboard's run page and list show it as an invalid date (200, not 500)", async () => {
    for (const runId of ["far-wait", "far-everything"]) {
      const res = await get(`/ui/runs/${runId}`);
      expect(res.status).toBe(200);
      expect(res.body).toContain("invalid date");
      expect(res.body).toContain('<svg xmlns="http://www.w3.org/2000/svg" class="wf wf-chart"');
    }
    const list = await get("/");
    expect(list.status).toBe(200);
    expect(list.body).toContain("far-everything");
    expect(list.body).toContain("invalid date");
  });

  it("the CLI timeline prints it as an invalid date", async () => {
    for (const runId of ["far-wait", "far-everything"]) {
      const { run, entries } = await runtime.client.history(runId);
      expect(formatTimeline(run, entries)).toContain("invalid date");
    }
  });

  it("the approver's form records the approval once and answers 200 with the deadline shown, then its page does too", async () => {
    const { run, entries } = await runtime.client.history("far-wait");
    const wait = entries.find((e) => e.key === "step#approval")?.record;
    if (wait?.type !== "step" || wait.kind !== "wait") throw new Error("no wait");
    // The link's own lifetime (at most a year, durations being bounded) cuts the far deadline short.
    const links = createApprovalLinks({ secret: SECRET, baseUrl: "http://wm.test", maxLifetime: "365d" });
    const link = links.mint({ runId: run.runId, waitId: "approval", signal: "approval", runCreatedAt: run.createdAt, issuedAt: wait.at, ...(wait.timeoutAt === undefined ? {} : { expiresAt: wait.timeoutAt }) });
    expect(link.expiresAt).toBe(wait.at + 365 * 86_400_000);
    const path = new URL(link.url ?? "").pathname;
    // The form as the page would post it (its form token is derived from the link's token).
    const body = `_csrf=${linkFormToken(SECRET, link.token)}&f.approved=true&f.approver=ana`;
    const posted = await handler(page(path, { body }));
    expect(posted.status).toBe(200);
    expect(posted.body).toContain("<h1>Approved</h1>");
    expect(posted.body).toMatch(/Answer by<\/dt><dd><time datetime="\d{4}-/);
    const again = await handler(page(path, { body }));
    expect(again.status).toBe(200);
    const shown = await handler(page(path));
    expect(shown.status).toBe(200);
    expect(shown.body).toContain("<h1>Approved</h1>");
    const after = (await runtime.client.history("far-wait")).entries.map((e) => e.record?.type);
    expect(after.filter((t) => t === "signal")).toHaveLength(1);
    expect(after.filter((t) => t === "resolution")).toHaveLength(1);
  });
});
