/**
 * Item 10: every input that decides a signal's identity is covered by the signature. A signed
 * signal captured on the wire, replayed within the replay window with an Idempotency-Key header
 * of the attacker's choosing, must not become a second signal (one approval signing off two
 * stages). Real dev server over node:http, real SQLite journal.
 */
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLocalRuntime, startDevServer, type DevServer, type LocalRuntime } from "waymark/local";
import { signRequest } from "../../lib/http/signing.ts";
import { SECRET, sentLinks, snapshot, tempDir, twoApprovals } from "./helpers.ts";
import { until } from "../support/until.ts";

let runtime: LocalRuntime;
let server: DevServer;

beforeAll(async () => {
  runtime = createLocalRuntime({ workflows: [twoApprovals], file: join(tempDir(), "journal.db"), webhook: { secret: SECRET } });
  runtime.start();
  server = await startDevServer({ runtime, port: 0, secret: SECRET });
});

afterAll(async () => {
  await server.close();
  await runtime.close();
});

const suspended = (runId: string) => until(`${runId} to wait`, async () => ((await runtime.client.get(runId)).status === "suspended" ? true : undefined));

async function post(path: string, body: string, headers: Record<string, string>) {
  const res = await fetch(`${server.url}${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body });
  return { status: res.status, body: (await res.json()) as { signalId?: string; waitId?: string; error?: { name: string; message: string } } };
}

describe("a captured signed signal replayed with a new Idempotency-Key (item 10)", () => {
  it("is refused and writes nothing: the header is not signed, so it cannot name a new signal", async () => {
    await runtime.client.start(twoApprovals, { runId: "si-1", input: {} });
    await suspended("si-1");
    const path = "/runs/si-1/signals/approval";
    const body = JSON.stringify({ payload: { approved: true, approver: "ana" } });
    const signature = signRequest(SECRET, { method: "POST", path, body });
    const first = await post(path, body, signature);
    expect(first).toMatchObject({ status: 202, body: { status: "delivered", waitId: "approval" } });
    await until("the second stage to wait", () => (sentLinks.get("si-1")?.length === 2 ? true : undefined));
    await suspended("si-1");

    // The attacker replays the captured bytes with headers of their own, well inside 5 minutes.
    const before = await snapshot(runtime.client);
    for (const key of ["replay-1", "replay-2"]) {
      const replay = await post(path, body, { ...signature, "idempotency-key": key });
      expect(replay.status).toBe(400);
      expect(replay.body.error).toMatchObject({ name: "InvalidRequestError" });
      expect(replay.body.error?.message).toMatch(/Idempotency-Key/);
    }
    expect(await snapshot(runtime.client)).toBe(before);
    // The plain replay is the same signal as before, answered as before.
    expect(await post(path, body, signature)).toEqual(first);
    expect((await runtime.client.get("si-1")).status).toBe("suspended");
    const signals = (await runtime.client.history("si-1")).entries.filter((e) => e.record?.type === "signal");
    expect(signals).toHaveLength(1);
  });

  it("still honours a header that repeats the signed body's signalId", async () => {
    await runtime.client.start(twoApprovals, { runId: "si-2", input: {} });
    await suspended("si-2");
    const path = "/runs/si-2/signals/approval";
    const body = JSON.stringify({ payload: { approved: true, approver: "ben" }, signalId: "hook-1" });
    const res = await post(path, body, { ...signRequest(SECRET, { method: "POST", path, body }), "idempotency-key": "hook-1" });
    expect(res).toMatchObject({ status: 202, body: { signalId: "hook-1", status: "delivered" } });
  });
});
