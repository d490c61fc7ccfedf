/**
 * Item 12: approval links do not outlive their run. A link is bound to the run's incarnation
 * (its createdAt), so after retention removes a run and a new run reuses the id, the old link
 * neither equals the new one nor decides the new run; and every link expires, a wait without a
 * timeout included (7 days by default). Real SQLite journal, real dev server, real handler.
 */
import { join } from "node:path";
import BetterSqlite3 from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { durable } from "waymark";
import type { DevServer, LocalRuntime } from "waymark/local";
import type { ApprovalLink } from "../../lib/core/definition.ts";
import { createHttpHandler } from "../../lib/http/handler.ts";
import { Approval, SECRET, parseBody, request, snapshot, startDevLab, stopDevLab, tempDir } from "./helpers.ts";
import { until } from "../support/until.ts";

const links = new Map<string, ApprovalLink[]>();

/** Waits for an approval with a link and no timeout at all. */
const openEnded = durable({ name: "open-ended", input: z.object({}).strict(), signals: { approval: Approval } }, async (_in, step) => {
  const decision = await step.waitForSignal("approval", { notify: (link) => void links.set(link.runId, [...(links.get(link.runId) ?? []), link]) });
  return decision.received ? decision.payload.approver : "none";
});

let file: string;
let runtime: LocalRuntime;
let server: DevServer;

beforeAll(async () => {
  file = join(tempDir(), "journal.db");
  ({ runtime, server } = await startDevLab({ workflows: [openEnded], file }));
});

afterAll(() => stopDevLab({ runtime, server }));

const linkOf = (runId: string, n: number) => until(`link ${n} of ${runId}`, () => links.get(runId)?.[n]);
const approve = (url: string, approver: string) =>
  fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ approved: true, approver }) });

/**
 * What retention does to a finished run (DynamoDB's TTL; the local store keeps runs forever):
 * the run and its records are gone, so its id can be started again.
 */
function expire(runId: string): void {
  const db = new BetterSqlite3(file);
  try {
    db.transaction(() => {
      for (const table of ["runs", "records", "wakes"]) db.prepare(`DELETE FROM ${table} WHERE run_id = ?`).run(runId);
    })();
  } finally {
    db.close();
  }
}

describe("approval links and the run they were minted for (item 12)", () => {
  it("a link of an earlier run with the same id is refused (410) and writes nothing", async () => {
    await runtime.client.start(openEnded, { runId: "inc-1", input: {} });
    const old = await linkOf("inc-1", 0);
    const first = await runtime.client.get("inc-1");
    await runtime.client.cancel("inc-1");
    expire("inc-1");
    // A run id is reused at a later millisecond than its first run's (days later, in practice).
    await until("the clock to pass the first run's creation", () => Date.now() > first.createdAt);
    await runtime.client.start(openEnded, { runId: "inc-1", input: {} });
    const fresh = await linkOf("inc-1", 1);
    await until("inc-1 to wait again", async () => ((await runtime.client.get("inc-1")).status === "suspended" ? true : undefined));
    expect(fresh.token).not.toBe(old.token);

    const before = await snapshot(runtime.client);
    const stale = await approve(old.url as string, "mallory");
    expect(stale.status).toBe(410);
    expect(await stale.json()).toMatchObject({ error: { name: "LinkExpiredError", message: expect.stringMatching(/earlier run/) } });
    expect((await fetch(old.url as string)).status).toBe(410);
    expect(await snapshot(runtime.client)).toBe(before);

    expect((await approve(fresh.url as string, "ana")).status).toBe(200);
    expect(await runtime.waitForRun("inc-1")).toMatchObject({ status: "completed", result: "ana" });
  });

  it("a link for a wait without a timeout still expires, after the maximum lifetime (7 days by default)", async () => {
    await runtime.client.start(openEnded, { runId: "life-1", input: {} });
    const link = await linkOf("life-1", 0);
    const { createdAt } = await runtime.client.get("life-1");
    expect(link.expiresAt).toBeGreaterThan(createdAt);
    expect(link.expiresAt).toBeLessThanOrEqual(createdAt + 7 * 86_400_000 + 60_000);
    const path = new URL(link.url as string).pathname;
    const at = (now: number) => createHttpHandler({ client: runtime.client, secret: SECRET, clock: { now: () => now } });
    expect(parseBody(await at(Date.now())(request("GET", path)))).toMatchObject({ open: true, expiresAt: link.expiresAt });
    const before = await snapshot(runtime.client);
    const late = await at(createdAt + 7 * 86_400_000 + 60_000)(request("POST", path, { headers: { "content-type": "application/json" }, body: JSON.stringify({ approved: true, approver: "ana" }) }));
    expect({ status: late.status, name: parseBody(late).error?.name }).toEqual({ status: 410, name: "LinkExpiredError" });
    expect(await snapshot(runtime.client)).toBe(before);
  });
});
