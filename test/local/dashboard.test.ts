/**
 * The dashboard's forms are guarded (a cross-site post, or one without the server's form token,
 * changes nothing), its pages escape what runs carry, and it pages and searches runs.
 */
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { durable } from "waymark";
import { createLocalRuntime, type LocalRuntime } from "waymark/local";
import { createDashboard, type Dashboard } from "../../lib/local/dashboard.ts";
import type { HttpRequest } from "../../lib/http/types.ts";
import { Approval, snapshot, tempDir } from "../http/helpers.ts";
import { until } from "../support/until.ts";

const hostile = `<img src=x onerror="alert(1)">`;
const waits = durable({ name: "waits", input: z.object({ note: z.string() }), signals: { approval: Approval } }, async (input, step) => {
  const d = await step.waitForSignal("approval", { summary: `about ${input.note}` });
  if (d.received && !d.payload.approved) throw new Error(`${hostile} rejected`);
  return d.received ? d.payload.approver : "none";
});

let runtime: LocalRuntime;
let dashboard: Dashboard;

const get = async (path: string, query: Record<string, string> = {}) => (await dashboard({ method: "GET", path, query, headers: {}, body: "" }))!;
const post = async (path: string, body: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string; headers: Record<string, string> }> =>
  (await dashboard({ method: "POST", path, query: {}, headers: { "content-type": "application/x-www-form-urlencoded", host: "127.0.0.1:8787", "sec-fetch-site": "same-origin", ...headers }, body } satisfies HttpRequest))!;
const tokenOf = (html: string) => /name="_csrf" value="([^"]+)"/.exec(html)?.[1] ?? "";

beforeAll(async () => {
  runtime = createLocalRuntime({ workflows: [waits], file: join(tempDir(), "journal.db") });
  runtime.start();
  dashboard = createDashboard({ client: runtime.client });
  for (let i = 1; i <= 30; i++) await runtime.client.start(waits, { runId: `run-${String(i).padStart(2, "0")}`, input: { note: i === 1 ? hostile : `n${i}` } });
  await until("all runs to wait", async () => (await runtime.client.list({ status: "suspended", limit: 100 })).runs.length === 30);
});

afterAll(async () => {
  await runtime.close();
});

describe("the dashboard", () => {
  it("pages runs by status and finds them by search", async () => {
    const first = await get("/", { status: "suspended" });
    expect(first.body.match(/<tr><td class="mono"><a href="\/ui\/runs\//g)).toHaveLength(25);
    const next = /href="(\/\?[^"]*cursor=[^"]+)" rel="next"/.exec(first.body)?.[1]?.replaceAll("&amp;", "&");
    expect(next).toBeDefined();
    const second = await get("/", Object.fromEntries(new URL(`http://x${next}`).searchParams));
    expect(second.body.match(/<tr><td class="mono"><a href="\/ui\/runs\//g)).toHaveLength(5);
    const found = await get("/", { q: "run-1" });
    expect([...found.body.matchAll(/>(run-\d\d)<\/a>/g)].map((m) => m[1]).sort()).toEqual(["run-10", "run-11", "run-12", "run-13", "run-14", "run-15", "run-16", "run-17", "run-18", "run-19"]);
  });

  it("lists queued runs under a tab of their own, with what they wait for", async () => {
    const now = Date.now();
    await runtime.store.createRun({ runId: "waiting-lane", workflow: waits.key, input: { note: "q" }, createdAt: now });
    const grant = await runtime.store.acquireLease("waiting-lane", { owner: "test", now, ttlMs: 1_000 });
    if (!grant.acquired) throw new Error("no lease");
    await runtime.store.releaseLease("waiting-lane", grant.lease.token, { now, wakeAt: now + 365 * 86_400_000, waitingFor: "queued:waits:k", status: "queued" });
    const all = await get("/");
    expect(all.body).toContain(`href="/?status=queued"`);
    const queued = await get("/", { status: "queued" });
    expect([...queued.body.matchAll(/>([\w-]+)<\/a><\/td>/g)].map((m) => m[1])).toEqual(["waiting-lane"]);
    expect(queued.body).toContain("queued:waits:k");
    expect((await get("/", { status: "suspended" })).body).not.toContain("waiting-lane");
    expect((await runtime.client.cancel("waiting-lane")).outcome).toBe("cancelled"); // out of the way of the other tests
  });

  it("escapes what a run carries: input, summary, errors", async () => {
    const page = await get("/ui/runs/run-01");
    expect(page.body).not.toContain("<img");
    expect(page.body).toContain("about &lt;img src=x onerror=&quot;alert(1)&quot;&gt;");
    expect(page.headers["content-security-policy"]).toContain("script-src 'self'");
  });

  it("draws the run page's waterfall for any view the query asks, ignoring what is not one", async () => {
    const queries: Array<Record<string, string>> = [{}, { from: "abc", to: "1e400", lanes: "-5" }, { from: "9999999999999999999", to: "1" }, { from: "0", to: String(8.64e15), lanes: "99" }];
    for (const query of queries) {
      const page = await get("/ui/runs/run-05", query);
      expect(page.status).toBe(200);
      expect(page.body).toMatch(/<g class="wf-item wf-k-wait wf-s-waiting" data-step="approval"/);
      expect(page.body).toContain('<a href="/ui/runs/run-05?from=');
    }
  });

  it("refuses cross-site posts and posts without the form token, changing nothing", async () => {
    const token = tokenOf((await get("/ui/runs/run-02")).body);
    const before = await snapshot(runtime.client);
    expect((await post("/ui/runs/run-02/cancel", `_csrf=${token}`, { "sec-fetch-site": "cross-site" })).status).toBe(403);
    expect((await post("/ui/runs/run-02/cancel", `_csrf=${token}`, { "sec-fetch-site": "", origin: "http://evil.example" })).status).toBe(403);
    expect((await post("/ui/runs/run-02/cancel", "")).status).toBe(403);
    expect((await post("/ui/runs/run-02/waits/approval", `_csrf=wrong&f.approved=true&f.approver=x`)).status).toBe(403);
    expect((await post("/ui/start", `_csrf=${token.slice(1)}&workflow=waits&runId=new&f.note=x`)).status).toBe(403);
    expect(await snapshot(runtime.client)).toBe(before);
  });

  it("answers a wait, cancels a run and starts one from same-origin forms", async () => {
    const token = tokenOf((await get("/ui/runs/run-03")).body);
    const bad = await post("/ui/runs/run-03/waits/approval", `_csrf=${token}&f.approved=true&f.approver=`);
    expect(bad.status).toBe(422);
    expect(bad.body).toContain('id="f-approver-error"');
    const ok = await post("/ui/runs/run-03/waits/approval", `_csrf=${token}&f.approved=false&f.approver=ops`);
    expect(ok).toMatchObject({ status: 303, headers: { location: "/ui/runs/run-03" } });
    const failed = await runtime.waitForRun("run-03");
    expect(failed.status).toBe("failed");
    expect((await get("/ui/runs/run-03")).body).toContain("&lt;img src=x onerror=&quot;alert(1)&quot;&gt; rejected");
    expect((await post("/ui/runs/run-04/cancel", `_csrf=${token}`)).status).toBe(303);
    expect((await runtime.waitForRun("run-04", { timeoutMs: 10_000 })).status).toBe("cancelled");
    const started = await post("/ui/start", `_csrf=${token}&workflow=waits&runId=from-ui&f.note=hi`);
    expect(started).toMatchObject({ status: 303, headers: { location: "/ui/runs/from-ui" } });
    expect((await runtime.client.get("from-ui")).input).toEqual({ note: "hi" });
  });
});
