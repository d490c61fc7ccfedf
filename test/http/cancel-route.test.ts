/**
 * The signed cancel route, `POST /runs/:runId/cancel`: the webhook's way to `client.cancel`.
 * Real dev server over node:http, real SQLite journal, the local runtime delivering the cancel.
 */
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DevServer, LocalRuntime } from "waymark/local";
import { signRequest } from "../../lib/http/signing.ts";
import { SECRET, snapshot, startDevLab, stopDevLab, tempDir, twoApprovals } from "./helpers.ts";
import { until } from "../support/until.ts";

let lab: { runtime: LocalRuntime; server: DevServer };

beforeAll(async () => {
  lab = await startDevLab({ workflows: [twoApprovals], file: join(tempDir(), "journal.db") });
});
afterAll(() => stopDevLab(lab));

async function post(path: string, body: string, headers: Record<string, string>) {
  const res = await fetch(`${lab.server.url}${path}`, { method: "POST", headers: { ...(body ? { "content-type": "application/json" } : {}), ...headers }, body });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> & { error?: { name: string; message: string; status?: string; issues?: unknown } } };
}
const sign = (path: string, body: string) => signRequest(SECRET, { method: "POST", path, body });
const waiting = (runId: string) => until(`${runId} to wait`, async () => ((await lab.runtime.client.get(runId)).status === "suspended" ? true : undefined));
const ended = (runId: string) => until(`${runId} to end`, async () => ((await lab.runtime.client.get(runId)).status === "cancelled" ? true : undefined));

describe("POST /runs/:runId/cancel", () => {
  it("signed: 202, the waiting run gets CancelledError and ends cancelled with the reason; asked again once over: 409 with its status", async () => {
    await lab.runtime.client.start(twoApprovals, { runId: "c-1", input: {} });
    await waiting("c-1");
    const path = "/runs/c-1/cancel";
    const body = JSON.stringify({ reason: "customer withdrew" });
    expect(await post(path, body, sign(path, body))).toEqual({ status: 202, body: { runId: "c-1", outcome: "requested", status: "suspended", cancelling: true } });
    await ended("c-1");
    expect(await lab.runtime.client.get("c-1")).toMatchObject({ status: "cancelled", error: { name: "CancelledError", fields: { reason: "customer withdrew" } } });
    const again = JSON.stringify({ reason: "another reason" });
    const late = await post(path, again, sign(path, again));
    expect(late.status).toBe(409);
    expect(late.body.error).toMatchObject({ name: "RunFinishedError" });
    expect(late.body.error?.message).toContain("cancelled");
  });

  it("an empty body is a cancel with the default reason", async () => {
    await lab.runtime.client.start(twoApprovals, { runId: "c-2", input: {} });
    await waiting("c-2");
    expect((await post("/runs/c-2/cancel", "", sign("/runs/c-2/cancel", ""))).status).toBe(202);
    await ended("c-2");
    expect((await lab.runtime.client.get("c-2")).error).toMatchObject({ fields: { reason: "cancelled by request" } });
  });

  it("refuses, writing nothing: no signature (401), a signature for another run (401), a malformed body (400), an unknown run (404)", async () => {
    await lab.runtime.client.start(twoApprovals, { runId: "c-3", input: {} });
    await waiting("c-3");
    const before = await snapshot(lab.runtime.client);
    const body = JSON.stringify({ reason: "x" });
    expect((await post("/runs/c-3/cancel", body, {})).status).toBe(401);
    expect((await post("/runs/c-3/cancel", body, sign("/runs/c-4/cancel", body))).status).toBe(401);
    for (const bad of [JSON.stringify({ reason: 5 }), JSON.stringify({ reason: "x", force: true }), JSON.stringify({ reason: "" }), JSON.stringify({ reason: "x".repeat(501) }), "[]", "{"]) {
      const answer = await post("/runs/c-3/cancel", bad, sign("/runs/c-3/cancel", bad));
      expect(answer.status, bad).toBe(400);
    }
    const unknown = await post("/runs/nope/cancel", body, sign("/runs/nope/cancel", body));
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toMatchObject({ name: "RunNotFoundError" });
    expect(await snapshot(lab.runtime.client)).toBe(before);
    expect((await lab.runtime.client.get("c-3")).status).toBe("suspended");
  });
});
