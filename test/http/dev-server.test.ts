/**
 * What the dev server adds around the handler: the body limit enforced while reading (no
 * unbounded buffering), loopback-only Host names, the raw path and query split, and the
 * dashboard with its text escaped (its forms: test/ui/pages.test.ts, test/local/dashboard.test.ts).
 */
import { request as httpRequest } from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { durable } from "waymark";
import { createLocalRuntime, startDevServer, type DevServer, type LocalRuntime } from "waymark/local";
import { signRequest } from "../../lib/http/signing.ts";
import { until } from "../support/until.ts";
import { SECRET, oneApproval, snapshot, tempDir } from "./helpers.ts";

const boom = durable({ name: "boom", input: z.object({}).strict() }, async () => {
  throw new Error(`<img src=x onerror="alert('owned')"> & more`);
});

let runtime: LocalRuntime;
let server: DevServer;

beforeAll(async () => {
  runtime = createLocalRuntime({ workflows: [oneApproval, boom], file: join(tempDir(), "journal.db"), webhook: { secret: SECRET } });
  runtime.start();
  server = await startDevServer({ runtime, port: 0, secret: SECRET, maxBodyBytes: 1024 });
  await runtime.client.start(oneApproval, { runId: "d-1", input: { n: 1 } });
  await runtime.client.start(boom, { runId: "d-2", input: {} });
  await runtime.waitForRun("d-2");
  // d-1 runs on beside d-2: the snapshots below compare a settled journal, so wait for its wait.
  await until("d-1 waits for its approval", async () => (await runtime.client.get("d-1")).status === "suspended");
});

afterAll(async () => {
  await server.close();
  await runtime.close();
});

/** A raw request, for what fetch will not send (a Host header, a body that never says its length). */
function raw(path: string, init: { method?: string; headers?: Record<string, string>; chunks?: Buffer[] } = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const url = new URL(server.url);
    const req = httpRequest({ host: url.hostname, port: url.port, path, method: init.method ?? "GET", headers: init.headers ?? {} }, (res) => {
      const parts: Buffer[] = [];
      res.on("data", (c: Buffer) => parts.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts).toString("utf8") }));
    });
    req.on("error", reject);
    for (const c of init.chunks ?? []) req.write(c);
    req.end();
  });
}

describe("the dev server", () => {
  it("refuses a body over the limit while reading it, declared or streamed, and writes nothing", async () => {
    const before = await snapshot(runtime.client);
    const big = JSON.stringify({ approved: true, approver: "x".repeat(2000) });
    const declared = await fetch(`${server.url}/runs/d-1/signals/approval`, { method: "POST", headers: { "content-type": "application/json" }, body: big });
    expect(declared.status).toBe(413);
    expect(await declared.json()).toMatchObject({ error: { name: "PayloadTooLargeError" } });
    // Chunked, with no content-length: cut off once past the limit.
    const streamed = await raw("/runs/d-1/signals/approval", { method: "POST", headers: { "content-type": "application/json", "transfer-encoding": "chunked" }, chunks: Array.from({ length: 8 }, () => Buffer.alloc(512, 0x61)) });
    expect(streamed.status).toBe(413);
    expect(await snapshot(runtime.client)).toBe(before);
    // And the server still answers.
    expect((await fetch(`${server.url}/nope`)).status).toBe(404);
  });

  it("answers only to loopback Host names (no DNS rebinding from a web page)", async () => {
    expect((await raw("/", { headers: { host: "attacker.example" } })).status).toBe(403);
    expect((await raw("/runs/d-1", { headers: { host: "attacker.example:80" } })).status).toBe(403);
    expect((await raw("/", { headers: { host: `localhost:${new URL(server.url).port}` } })).status).toBe(200);
  });

  it("routes on the raw path; the query string is neither routed nor signed", async () => {
    const path = "/runs/d-1";
    const res = await fetch(`${server.url}${path}?verbose=1&x=%3C`, { headers: signRequest(SECRET, { method: "GET", path, body: "" }) });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ runId: "d-1", status: "suspended" });
    const res405 = await fetch(`${server.url}${path}`, { method: "PATCH" });
    expect(res405.status).toBe(405);
    expect(res405.headers.get("allow")).toBe("GET");
  });

  it("shows a dashboard of runs under a strict CSP, with their text escaped", async () => {
    const res = await fetch(`${server.url}/`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/html/);
    expect(res.headers.get("content-security-policy")).toBe("default-src 'none'; style-src 'unsafe-inline'; script-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'");
    const html = await res.text();
    expect(html).toContain('<a href="/ui/runs/d-1">d-1</a>');
    expect(html).toContain("signal:approval");
    expect(html).toContain("&lt;img src=x onerror=&quot;alert(&#39;owned&#39;)&quot;&gt; &amp; more");
    expect(html).not.toContain("<img");
    expect((await fetch(`${server.url}/`, { method: "POST" })).status).toBe(404);
  });
});
