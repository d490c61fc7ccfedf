/**
 * Every bad input of issue 4 against the webhook handler on the local runtime (a real SQLite
 * journal): a clear 4xx with a JSON error body, never a stack, and the journal unchanged.
 */
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLocalRuntime, type LocalRuntime } from "waymark/local";
import { createHttpHandler } from "../../lib/http/handler.ts";
import { createApprovalLinks } from "../../lib/http/tokens.ts";
import { readGuardedForm } from "../../lib/http/form-guard.ts";
import type { HttpHandler, HttpRequest } from "../../lib/http/types.ts";
import { OTHER_SECRET, SECRET, oneApproval, parseBody, postJson, request, sentLinks, signed, snapshot, tempDir, twoApprovals } from "./helpers.ts";
import { until } from "../support/until.ts";

let runtime: LocalRuntime;
let handler: HttpHandler;

const linkPath = (runId: string, n = 0): string => new URL(sentLinks.get(runId)?.[n]?.url ?? "http://x/none").pathname;
const waitFor = (runId: string, status: string) =>
  until(`${runId} to be ${status}`, async () => ((await runtime.client.get(runId)).status === status ? true : undefined));

beforeAll(async () => {
  runtime = createLocalRuntime({ workflows: [oneApproval, twoApprovals], file: join(tempDir(), "journal.db"), webhook: { secret: SECRET, baseUrl: "http://wm.test" } });
  runtime.start();
  handler = createHttpHandler({ client: runtime.client, secret: SECRET });
  const start = async (workflow: string, runId: string, input: unknown) =>
    expect((await handler(signed("POST", "/runs", { workflow, runId, input }, Date.now()))).status).toBe(201);
  await start("one-approval", "w-1", { n: 1 });
  await start("one-approval", "w-2", { n: 2 });
  await start("two-approvals", "w-3", {});
  await waitFor("w-1", "suspended");
  await waitFor("w-2", "suspended");
  await waitFor("w-3", "suspended");
  // w-2: approved through its link, finished. w-3: first approval given, waiting for the second.
  expect((await handler(postJson(linkPath("w-2"), { approved: true, approver: "ana" }))).status).toBe(200);
  await runtime.waitForRun("w-2");
  expect((await handler(postJson(linkPath("w-3"), { approved: true, approver: "first" }))).status).toBe(200);
  await until("the second link", () => (sentLinks.get("w-3")?.length === 2 ? true : undefined));
  await waitFor("w-3", "suspended").catch(async (e) => { console.log(JSON.stringify(await runtime.client.history("w-3"), null, 1)); throw e; });
});

afterAll(async () => {
  await runtime.close();
});

/** Sends `req`, checks the refusal, and that nothing at all was written. */
async function refused(req: HttpRequest, status: number, name: string, h: HttpHandler = handler) {
  const before = await snapshot(runtime.client);
  const res = await h(req);
  const body = parseBody(res);
  expect({ status: res.status, name: body.error?.name }).toEqual({ status, name });
  expect(res.headers["content-type"]).toMatch(/^application\/json/);
  expect(typeof body.error?.message).toBe("string");
  expect(res.body).not.toMatch(/\bstack\b|\n\s+at /);
  expect(await snapshot(runtime.client)).toBe(before);
  return { res, body };
}

const now = () => Date.now();

describe("bad input to the webhook: a clear 4xx and the journal unchanged", () => {
  it("malformed JSON → 400", async () => {
    await refused(signed("POST", "/runs", '{"workflow": "one-approval", ', now()), 400, "MalformedJsonError");
    await refused(postJson(linkPath("w-1"), "{approved: true}"), 400, "MalformedJsonError");
    await refused(postJson(linkPath("w-1"), ""), 400, "MalformedJsonError");
  });

  it("JSON nested too deep, or with a __proto__ key → 400", async () => {
    await refused(postJson(linkPath("w-1"), `${"[".repeat(5000)}${"]".repeat(5000)}`), 400, "MalformedJsonError");
    await refused(postJson(linkPath("w-1"), '{"approved":true,"approver":"a","__proto__":{"admin":true}}'), 400, "MalformedJsonError");
  });

  it("wrong or missing content type → 415", async () => {
    const body = JSON.stringify({ payload: { approved: true, approver: "ana" } });
    const req = signed("POST", "/runs/w-1/signals/approval", body, now());
    await refused({ ...req, headers: { ...req.headers, "content-type": "text/plain" } }, 415, "UnsupportedMediaTypeError");
    await refused({ ...req, headers: { ...req.headers, "content-type": "application/json; charset=latin1" } }, 415, "UnsupportedMediaTypeError");
    // A form (the approver's page posts one) without the page's form token: a 403 page, nothing written.
    const before = await snapshot(runtime.client);
    const form = await handler(request("POST", linkPath("w-1"), { headers: { "content-type": "application/x-www-form-urlencoded" }, body: "f.approved=true&f.approver=ana" }));
    expect(form.status).toBe(403);
    expect(form.headers["content-type"]).toMatch(/^text\/html/);
    expect(await snapshot(runtime.client)).toBe(before);
    const bare = await refused(request("POST", linkPath("w-1"), { body: '{"approved":true,"approver":"ana"}' }), 415, "UnsupportedMediaTypeError");
    expect(bare.body.error?.message).toContain("without a content-type header; add -H 'content-type: application/json'");
  });

  it("JSON posted to an approval link as a form (curl -d without a content-type) → 415 JSON with the fix, not the page's 403", async () => {
    const json = '{"approved":true,"approver":"ana"}';
    for (const body of [json, `  ${json}`, "[1]"]) {
      const { res, body: answer } = await refused(request("POST", linkPath("w-1"), { headers: { "content-type": "application/x-www-form-urlencoded" }, body }), 415, "UnsupportedMediaTypeError");
      expect(res.headers["content-type"]).toMatch(/^application\/json/);
      expect(answer.error?.message).toContain("came as application/x-www-form-urlencoded, which is what curl -d sends unless told otherwise; add -H 'content-type: application/json'");
    }
    // The dashboard's forms read their bodies through the same guard: 415 with the fix, before the 403.
    expect(() => readGuardedForm(request("POST", "/", { headers: { "content-type": "application/x-www-form-urlencoded" }, body: json }), () => false)).toThrow(/curl -d sends unless told otherwise/);
    // A forged token is still 404 first: the media type is judged after the token.
    await refused(request("POST", "/approvals/forged.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", { headers: { "content-type": "application/x-www-form-urlencoded" }, body: json }), 404, "LinkNotFoundError");
  });

  it("oversized body → 413, before the signature is even checked", async () => {
    const big = JSON.stringify({ payload: { approved: true, approver: "a".repeat(64 * 1024) } });
    await refused(signed("POST", "/runs/w-1/signals/approval", big, now()), 413, "PayloadTooLargeError");
    await refused(request("POST", "/runs/w-1/signals/approval", { body: big }), 413, "PayloadTooLargeError");
    await refused(postJson(linkPath("w-1"), { approved: true, approver: "é".repeat(33 * 1024) }), 413, "PayloadTooLargeError");
  });

  it("missing, wrong or malformed signature → 401 with a challenge", async () => {
    const body = { workflow: "one-approval", runId: "new-1", input: { n: 1 } };
    const { res } = await refused(postJson("/runs", body), 401, "SignatureError");
    expect(res.headers["www-authenticate"]).toMatch(/^Waymark-HMAC-SHA256/);
    await refused(signed("POST", "/runs", body, now(), OTHER_SECRET), 401, "SignatureError");
    const good = signed("POST", "/runs", body, now());
    await refused({ ...good, headers: { ...good.headers, "x-waymark-signature": "v1=" + "0".repeat(64) } }, 401, "SignatureError");
    await refused({ ...good, headers: { ...good.headers, "x-waymark-signature": "sha256=abc" } }, 401, "SignatureError");
    await refused({ ...good, body: JSON.stringify({ ...body, runId: "new-2" }) }, 401, "SignatureError");
    await refused({ ...good, path: "/runs/w-1/signals/approval" }, 401, "SignatureError");
    await refused(request("GET", "/runs/w-1"), 401, "SignatureError");
  });

  it("a timestamp outside the 5-minute window, old or future → 401", async () => {
    const body = { workflow: "one-approval", runId: "new-3", input: { n: 1 } };
    const { body: err } = await refused(signed("POST", "/runs", body, now() - 6 * 60_000), 401, "SignatureError");
    expect(err.error?.message).toMatch(/replay window/);
    await refused(signed("POST", "/runs", body, now() + 6 * 60_000), 401, "SignatureError");
  });

  it("a forged or tampered approval token → 404 (no such link)", async () => {
    await refused(postJson("/approvals/not-a-token", { approved: true, approver: "eve" }), 404, "LinkNotFoundError");
    await refused(request("GET", "/approvals/not-a-token"), 404, "LinkNotFoundError");
    const other = createApprovalLinks({ secret: OTHER_SECRET }).mint({ runId: "w-1", waitId: "approval", signal: "approval", runCreatedAt: 0, issuedAt: Date.now() });
    await refused(postJson(`/approvals/${other.token}`, { approved: true, approver: "eve" }), 404, "LinkNotFoundError");
    const [payload, sig] = linkPath("w-1").slice("/approvals/".length).split(".") as [string, string];
    const claims = JSON.parse(Buffer.from(payload, "base64url").toString()) as Record<string, unknown>;
    const retargeted = Buffer.from(JSON.stringify({ ...claims, runId: "w-3", waitId: "approval#2" })).toString("base64url");
    await refused(postJson(`/approvals/${retargeted}.${sig}`, { approved: true, approver: "eve" }), 404, "LinkNotFoundError");
    const unlimited = Buffer.from(JSON.stringify({ runId: "w-1", waitId: "approval", signal: "approval" })).toString("base64url");
    await refused(postJson(`/approvals/${unlimited}.${sig}`, { approved: true, approver: "eve" }), 404, "LinkNotFoundError");
  });

  it("an expired token → 410, for reading and for approving", async () => {
    const later = createHttpHandler({ client: runtime.client, secret: SECRET, clock: { now: () => Date.now() + 25 * 3600_000 } });
    await refused(request("GET", linkPath("w-1")), 410, "LinkExpiredError", later);
    await refused(postJson(linkPath("w-1"), { approved: true, approver: "ana" }), 410, "LinkExpiredError", later);
  });

  it("a used token → 409 with the recorded decision; the very same retry → 200, the same answer", async () => {
    const { body } = await refused(postJson(linkPath("w-2"), { approved: false, approver: "mallory" }), 409, "WaitResolvedError");
    expect(body.error?.decision).toMatchObject({ via: "signal" });
    const before = await snapshot(runtime.client);
    const retry = await handler(postJson(linkPath("w-2"), { approved: true, approver: "ana" }));
    expect(retry.status).toBe(200);
    expect(parseBody(retry)).toMatchObject({ status: "delivered", waitId: "approval", runId: "w-2" });
    expect(await snapshot(runtime.client)).toBe(before);
  });

  it("a stale link (an earlier wait of the same run) → 409, and the current wait stays open", async () => {
    const { body } = await refused(postJson(linkPath("w-3", 0), { approved: true, approver: "replayer" }), 409, "WaitResolvedError");
    expect(body.error?.decision).toMatchObject({ via: "signal" });
    const status = parseBody(await handler(signed("GET", "/runs/w-3", undefined, now())));
    expect(status.pendingWaits).toEqual([expect.objectContaining({ waitId: "approval#2", signal: "approval" })]);
  });

  it("an unknown run → 404", async () => {
    await refused(signed("GET", "/runs/nope", undefined, now()), 404, "RunNotFoundError");
    await refused(signed("GET", "/runs/%3Cscript%3E", undefined, now()), 404, "RunNotFoundError");
    await refused(signed("POST", "/runs/nope/signals/approval", { payload: { approved: true, approver: "a" } }, now()), 404, "RunNotFoundError");
  });

  it("an unknown wait → 404; an undeclared signal → 404; a resolved wait → 409 with the decision", async () => {
    await refused(signed("POST", "/runs/w-1/signals/approval", { payload: { approved: true, approver: "a" }, waitId: "approval#7" }, now()), 404, "WaitNotFoundError");
    await refused(signed("POST", "/runs/w-1/signals/refund", { payload: {} }, now()), 404, "UnknownSignalError");
    const { body } = await refused(signed("POST", "/runs/w-3/signals/approval", { payload: { approved: true, approver: "a" }, waitId: "approval" }, now()), 409, "WaitResolvedError");
    expect(body.error?.decision).toMatchObject({ via: "signal" });
  });

  it("a payload that fails the wait's schema → 422 with the issues", async () => {
    const { body } = await refused(postJson(linkPath("w-1"), { approved: "yes" }), 422, "InvalidInputError");
    expect(body.error?.issues?.map((i) => i.path)).toEqual(["approved", "approver"]);
    await refused(signed("POST", "/runs/w-1/signals/approval", { payload: { approved: true, approver: "" } }, now()), 422, "InvalidInputError");
    await refused(postJson(linkPath("w-1"), { approved: true, approver: "a", note: "x".repeat(501) }), 422, "InvalidInputError");
  });

  it("a run input that fails its schema, a bad run id, an unknown workflow → 422; another input for a run id → 409", async () => {
    const { body } = await refused(signed("POST", "/runs", { workflow: "one-approval", runId: "new-4", input: { n: 1.5 } }, now()), 422, "InvalidInputError");
    expect(body.error?.issues?.[0]?.path).toBe("n");
    await refused(signed("POST", "/runs", { workflow: "one-approval", runId: "bad id!", input: { n: 1 } }, now()), 422, "InvalidInputError");
    await refused(signed("POST", "/runs", { workflow: "one-approval", runId: "new-5", input: { n: 1e400 } }, now()), 422, "InvalidInputError");
    const unknown = await refused(signed("POST", "/runs", { workflow: "nope", runId: "new-6", input: {} }, now()), 422, "InvalidRequestError");
    expect(unknown.body.error?.message).toBe('no workflow named "nope" is registered here; hosted here: one-approval, two-approvals');
    await refused(signed("POST", "/runs", { workflow: "one-approval", runId: "w-1", input: { n: 99 } }, now()), 409, "RunConflictError");
  });

  it("a body of the wrong shape → 400 with the issues", async () => {
    const { body } = await refused(signed("POST", "/runs", { runId: "new-7" }, now()), 400, "InvalidRequestError");
    expect(body.error?.issues?.map((i) => i.path).sort()).toEqual(["input", "workflow"]);
    await refused(signed("POST", "/runs", [1, 2], now()), 400, "InvalidRequestError");
    await refused(signed("POST", "/runs/w-1/signals/approval", { approved: true, approver: "a" }, now()), 400, "InvalidRequestError");
    await refused(signed("POST", "/runs/w-1/signals/approval", { payload: {}, extra: 1 }, now()), 400, "InvalidRequestError");
    const req = signed("POST", "/runs/w-1/signals/approval", { payload: { approved: true, approver: "a" }, signalId: "s-1" }, now());
    await refused({ ...req, headers: { ...req.headers, "idempotency-key": "s-2" } }, 400, "InvalidRequestError");
  });

  it("a signal to a finished run → 409, with the decision of its wait when there was one", async () => {
    const { body } = await refused(signed("POST", "/runs/w-2/signals/approval", { payload: { approved: true, approver: "late" } }, now()), 409, "WaitResolvedError");
    expect(body.error?.decision).toMatchObject({ via: "signal" });
    await handler(signed("POST", "/runs", { workflow: "one-approval", runId: "w-11", input: { n: 11 } }, now()));
    await waitFor("w-11", "suspended");
    await runtime.client.cancel("w-11");
    await waitFor("w-11", "cancelled");
    // Cancelled while waiting: the wait's decision is the cancellation.
    const byName = await refused(signed("POST", "/runs/w-11/signals/approval", { payload: { approved: true, approver: "late" } }, now()), 409, "WaitResolvedError");
    expect(byName.body.error?.decision).toMatchObject({ via: "cancelled" });
    const byLink = await refused(postJson(linkPath("w-11"), { approved: true, approver: "late" }), 409, "WaitResolvedError");
    expect(byLink.body.error?.decision).toMatchObject({ via: "cancelled" });
  });

  it("a method or path that does not exist → 405 with allow, or 404", async () => {
    const { res } = await refused(signed("DELETE", "/runs/w-1", undefined, now()), 405, "MethodNotAllowedError");
    expect(res.headers.allow).toBe("GET");
    expect((await refused(request("GET", "/runs"), 405, "MethodNotAllowedError")).res.headers.allow).toBe("POST");
    expect((await refused(request("PUT", linkPath("w-1")), 405, "MethodNotAllowedError")).res.headers.allow).toBe("GET, POST");
    for (const path of ["/", "/nope", "/runs/w-1/", "//runs", "/runs/w-1/signals", "/runs//signals/approval", "/approvals/", "/runs/%E0%A4%A/signals/x", "runs"]) {
      await refused(request("GET", path), 404, "NotFoundError");
    }
  });
});

describe("the webhook's happy paths, on the same runs", () => {
  it("reads a run with its pending waits, and an approval link without writing", async () => {
    const before = await snapshot(runtime.client);
    const run = await handler(signed("GET", "/runs/w-1", undefined, now()));
    expect(run.status).toBe(200);
    expect(parseBody(run)).toMatchObject({ runId: "w-1", workflow: "one-approval", status: "suspended", pendingWaits: [{ waitId: "approval", signal: "approval" }] });
    const link = await handler(request("GET", linkPath("w-1")));
    expect(parseBody(link)).toMatchObject({ runId: "w-1", waitId: "approval", signal: "approval", open: true, runStatus: "suspended" });
    const used = parseBody(await handler(request("GET", linkPath("w-2"))));
    expect(used).toMatchObject({ open: false, decision: { via: "signal" } });
    expect(await snapshot(runtime.client)).toBe(before);
  });

  it("starts a run idempotently: 201, then 200 with the same input", async () => {
    const body = { workflow: "one-approval", runId: "w-9", input: { n: 9 } };
    expect((await handler(signed("POST", "/runs", body, now()))).status).toBe(201);
    const again = await handler(signed("POST", "/runs", { input: { n: 9 }, runId: "w-9", workflow: "one-approval" }, now()));
    expect(again.status).toBe(200);
    expect(parseBody(again)).toMatchObject({ runId: "w-9", created: false });
  });

  it("delivers a signal by name once per signal id (an Idempotency-Key header may repeat it)", async () => {
    await waitFor("w-9", "suspended");
    const req = signed("POST", "/runs/w-9/signals/approval", { payload: { approved: false, approver: "bo" }, signalId: "hook-9" }, now());
    const keyed = { ...req, headers: { ...req.headers, "idempotency-key": "hook-9" } };
    const first = await handler(keyed);
    expect(first.status).toBe(202);
    expect(parseBody(first)).toEqual({ signalId: "hook-9", status: "delivered", waitId: "approval" });
    expect(parseBody(await handler(keyed))).toEqual(parseBody(first));
    expect((await runtime.waitForRun("w-9")).result).toEqual({ outcome: "rejected", by: "bo" });
  });

  it("a replayed or re-signed signal without an id (same path and body) is the same signal, not a second one", async () => {
    await handler(signed("POST", "/runs", { workflow: "two-approvals", runId: "w-10", input: {} }, now()));
    await waitFor("w-10", "suspended");
    const req = signed("POST", "/runs/w-10/signals/approval", { payload: { approved: true, approver: "cy" } }, now());
    const first = parseBody(await handler(req));
    expect(first).toMatchObject({ status: "delivered", waitId: "approval" });
    await until("the second wait", () => (sentLinks.get("w-10")?.length === 2 ? true : undefined));
    await waitFor("w-10", "suspended");
    // Replayed within the window: answered as before; the second wait stays open.
    expect(parseBody(await handler(req))).toEqual(first);
    // A caller's retry is re-signed with a later timestamp: still the same signal.
    const resigned = signed("POST", "/runs/w-10/signals/approval", { payload: { approved: true, approver: "cy" } }, now() + 2_000);
    expect(parseBody(await handler(resigned))).toEqual(first);
    const signals = (await runtime.client.history("w-10")).entries.filter((e) => e.record?.type === "signal");
    expect(signals).toHaveLength(1);
  });
});
