/**
 * Generated requests against the webhook handler on the local runtime (a real SQLite journal):
 * random methods, paths, headers and bodies (huge, garbage, unicode, deeply nested), forged
 * signatures and tokens, and correctly signed requests with bodies that cannot be valid.
 * Whatever arrives: no 5xx, no throw, no stack in a body, and not one write.
 */
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLocalRuntime, type LocalRuntime } from "waymark/local";
import { createHttpHandler } from "../../lib/http/handler.ts";
import { signRequest } from "../../lib/http/signing.ts";
import { createApprovalLinks } from "../../lib/http/tokens.ts";
import type { HttpHandler, HttpRequest } from "../../lib/http/types.ts";
import { Approval, OTHER_SECRET, SECRET, oneApproval, postJson, request, sentLinks, signed, snapshot, tempDir } from "./helpers.ts";
import { until } from "../support/until.ts";
import { validate } from "../../lib/core/validate.ts";

let runtime: LocalRuntime;
let handler: HttpHandler;
let open: string; // token of a wait still open
let used: string; // token of a wait already decided
const faults: unknown[] = [];
let requests = 0;

beforeAll(async () => {
  runtime = createLocalRuntime({ workflows: [oneApproval], file: join(tempDir(), "journal.db"), webhook: { secret: SECRET, baseUrl: "http://wm.test" } });
  runtime.start();
  handler = createHttpHandler({ client: runtime.client, secret: SECRET, onFault: (err) => faults.push(err) });
  for (const runId of ["f-1", "f-2"]) await handler(signed("POST", "/runs", { workflow: "one-approval", runId, input: { n: 1 } }, Date.now()));
  const tokenOf = (runId: string) => until(`the link of ${runId}`, () => sentLinks.get(runId)?.[0]?.token);
  open = await tokenOf("f-1");
  used = await tokenOf("f-2");
  await until("f-2 to wait", async () => ((await runtime.client.get("f-2")).status === "suspended" ? true : undefined));
  expect((await handler(postJson(`/approvals/${used}`, { approved: true, approver: "ana" }))).status).toBe(200);
  await runtime.waitForRun("f-2");
  await runtime.stop(); // nothing may move the journal but the requests below
});

afterAll(async () => {
  await runtime.close();
  console.log(`fuzz: ${requests} generated requests, ${faults.length} server faults`);
});

/** Fires one request: never a throw, never a 5xx, a JSON error body without a stack for every 4xx. */
async function fire(req: HttpRequest): Promise<number> {
  requests++;
  const res = await handler(req);
  expect(res.status, `${req.method} ${req.path.slice(0, 80)}`).toBeGreaterThanOrEqual(200);
  expect(res.status, `${req.method} ${req.path.slice(0, 80)}`).toBeLessThan(500);
  expect(res.body).not.toMatch(/\bstack\b|\n\s+at /);
  // Form posts (the approver's page) are answered with pages; everything else with JSON errors.
  if (res.status >= 400 && String(res.headers["content-type"]).startsWith("text/html")) expect(req.headers["content-type"]).toMatch(/^application\/x-www-form-urlencoded/i);
  else if (res.status >= 400) expect(typeof (JSON.parse(res.body) as { error: { name: unknown } }).error.name).toBe("string");
  return res.status;
}

const realPaths = () => ["/runs", "/runs/f-1", "/runs/f-2", "/runs/nope", "/runs/f-1/signals/approval", "/runs/f-2/signals/approval", "/runs/f-1/signals/refund", `/approvals/${open}`, `/approvals/${used}`];
const methods = fc.oneof(fc.constantFrom("GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "get", "post", "Post"), fc.string({ maxLength: 8 }));
const segment = fc.oneof(fc.constantFrom("runs", "approvals", "signals", "f-1", "approval", "..", ".", "%2F", "%E0%A4%A", "%00", ""), fc.string({ maxLength: 20 }), fc.string({ unit: "binary", maxLength: 8 }));
const paths = fc.oneof(
  fc.constantFrom(...["/", "", "runs", "//runs", "/runs/", "/approvals/"]),
  fc.webPath(),
  fc.string({ maxLength: 200 }),
  fc.array(segment, { maxLength: 6 }).map((s) => `/${s.join("/")}`),
);
const contentTypes = fc.oneof(
  fc.constantFrom("application/json", "application/json; charset=utf-8", "APPLICATION/JSON", "application/json; charset=latin1", "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ""),
  fc.string({ maxLength: 40 }),
);
/** Mostly the right method and media type, so most requests get past the early gates. */
const mostlyPost = fc.oneof({ weight: 6, arbitrary: fc.constant("POST") }, { weight: 1, arbitrary: fc.constantFrom("GET", "PUT", "post", "DELETE") });
const mostlyJson = fc.oneof({ weight: 5, arbitrary: fc.constant("application/json") }, { weight: 1, arbitrary: contentTypes });
const deep = fc.integer({ min: 1, max: 3000 }).map((n) => `${'{"a":'.repeat(n)}1${"}".repeat(n)}`);
const bodies = fc.oneof(
  { weight: 3, arbitrary: fc.string({ maxLength: 300 }) },
  { weight: 2, arbitrary: fc.string({ unit: "binary", maxLength: 200 }) },
  { weight: 3, arbitrary: fc.json({ maxDepth: 4 }) },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify({ payload: v })) },
  { weight: 2, arbitrary: fc.record({ approved: fc.oneof(fc.boolean(), fc.string(), fc.constant(null)), approver: fc.oneof(fc.string(), fc.integer()), note: fc.string({ maxLength: 600 }) }, { requiredKeys: [] }).map((v) => JSON.stringify(v)) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }).map((input) => JSON.stringify({ workflow: "one-approval", runId: "fz", input })) },
  { weight: 1, arbitrary: fc.integer({ min: 60_000, max: 200_000 }).map((n) => "x".repeat(n)) },
  { weight: 1, arbitrary: fc.integer({ min: 20_000, max: 40_000 }).map((n) => JSON.stringify({ payload: { approved: true, approver: "é".repeat(n) } })) },
  { weight: 1, arbitrary: deep },
  { weight: 1, arbitrary: fc.constantFrom('{"__proto__":{"x":1}}', '{"constructor":{"prototype":{"x":1}}}', "1e400", "-0", "null", "[]", '"', "\u0000", "\ufeff{}") },
);
const headerNames = fc.oneof(fc.constantFrom("content-type", "x-waymark-timestamp", "x-waymark-signature", "idempotency-key", "__proto__", "constructor"), fc.string({ maxLength: 20 }));
const headers = fc.dictionary(headerNames, fc.oneof(fc.string({ maxLength: 80 }), fc.string({ unit: fc.constantFrom(..."0123456789abcdef"), minLength: 64, maxLength: 64 }).map((h) => `v1=${h}`)), { maxKeys: 6 });
const b64 = (min: number, max: number) => fc.string({ unit: fc.constantFrom(..."ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"), minLength: min, maxLength: max });

/** Could this request, correctly signed, legitimately write? Then it is no fuzz case. */
function couldWrite(path: string, body: string): boolean {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return false;
  }
  if (path === "/runs") return typeof value === "object" && value !== null && (value as { workflow?: unknown }).workflow === "one-approval" && validate(oneApproval.input, (value as { input?: unknown }).input).success;
  if (path.endsWith("/signals/approval")) return typeof value === "object" && value !== null && Approval.safeParse((value as { payload?: unknown }).payload).success;
  if (path === `/approvals/${open}`) return Approval.safeParse(value).success;
  return false;
}

describe("fuzzing the webhook handler", () => {
  it("random requests with forged or no credentials: 4xx, nothing written", async () => {
    const before = await snapshot(runtime.client);
    await fc.assert(
      fc.asyncProperty(methods, fc.oneof(paths, fc.constantFrom(...realPaths())), headers, contentTypes, bodies, async (method, path, h, type, body) => {
        // The open link is a credential of its own: a valid approval POSTed to it is no forgery.
        fc.pre(!(path === `/approvals/${open}` && couldWrite(path, body)));
        const status = await fire(request(method, path, { headers: { ...h, "content-type": type }, body }));
        if (!path.startsWith("/approvals/") || method.toUpperCase() !== "GET") expect(status).toBeGreaterThanOrEqual(400);
      }),
      { numRuns: 2500 },
    );
    expect(await snapshot(runtime.client)).toBe(before);
  });

  it("correctly signed requests with bodies that cannot be valid: 4xx (or a read), nothing written", async () => {
    const before = await snapshot(runtime.client);
    await fc.assert(
      fc.asyncProperty(mostlyPost, fc.constantFrom(...realPaths().filter((p) => !p.startsWith("/approvals"))), mostlyJson, bodies, fc.option(fc.string({ maxLength: 140 })), async (method, path, type, text, key) => {
        fc.pre(!couldWrite(path, text));
        const h: Record<string, string> = { "content-type": type, ...signRequest(SECRET, { method, path, body: text }, Date.now()) };
        if (key !== null) h["idempotency-key"] = key;
        await fire(request(method, path, { headers: h, body: text }));
      }),
      { numRuns: 1500 },
    );
    expect(await snapshot(runtime.client)).toBe(before);
  });

  it("forged, tampered, foreign and used approval tokens, and garbage for a genuine one: 4xx, nothing written", async () => {
    const before = await snapshot(runtime.client);
    const foreign = createApprovalLinks({ secret: OTHER_SECRET }).mint({ runId: "f-1", waitId: "approval", signal: "approval", runCreatedAt: 0, issuedAt: Date.now() }).token;
    const tampered = fc.tuple(fc.nat(), fc.constantFrom(..."ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.")).map(([i, c]) => {
      const at = i % open.length;
      return `${open.slice(0, at)}${c}${open.slice(at + 1)}`;
    });
    const tokens = fc.oneof(
      fc.constant(open),
      fc.constant(used),
      fc.constant(foreign),
      tampered,
      fc.tuple(b64(0, 300), b64(0, 50)).map(([p, s]) => `${p}.${s}`),
      fc.tuple(fc.jsonValue({ maxDepth: 2 }), b64(43, 43)).map(([v, s]) => `${Buffer.from(JSON.stringify(v)).toString("base64url")}.${s}`),
      fc.string({ maxLength: 3000 }).map(encodeURIComponent),
    );
    await fc.assert(
      fc.asyncProperty(mostlyPost, tokens, mostlyJson, bodies, async (method, token, type, body) => {
        const path = `/approvals/${token}`;
        fc.pre(!(token === open && couldWrite(path, body)));
        const status = await fire(request(method, path, { headers: { "content-type": type }, body }));
        if (token !== open && token !== used) expect(status).toBeGreaterThanOrEqual(400);
      }),
      { numRuns: 1500 },
    );
    expect(await snapshot(runtime.client)).toBe(before);
    expect(faults).toEqual([]);
  });
});
