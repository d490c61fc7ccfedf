/**
 * Flow control per key on the AWS runtime: the real Lambda handler fed by the SQS event source
 * loop (two pollers, every wake delivered twice), slots and queue in DynamoDB Local. At most
 * `limit` runs of one key execute at once, measured by the step bodies; every run completes. Runs
 * waiting for a slot are `queued` in the table (listed by that status), and a cancel ends one at once.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { durable } from "../../lib/index.ts";
import { peers } from "./endpoints.ts";
import { type E2e, createE2e } from "./harness.ts";
import { until } from "../support/until.ts";

const running = new Map<string, number>();
const peak = new Map<string, number>();
const tenantJob = durable({ name: "tenant-job", input: z.object({ tenant: z.string(), n: z.number() }), concurrency: { key: (i) => i.tenant, limit: 2 } }, async ({ tenant, n }, step) =>
  step.run("work", async () => {
    const now = (running.get(tenant) ?? 0) + 1;
    running.set(tenant, now);
    peak.set(tenant, Math.max(peak.get(tenant) ?? 0, now));
    await new Promise((r) => setTimeout(r, 40));
    running.set(tenant, (running.get(tenant) ?? 1) - 1);
    return n;
  }),
);

/** One lane: the holder's body waits until the test opens the gate. */
let openGate: () => void = () => {};
const gate = new Promise<void>((resolve) => (openGate = resolve));
const began: string[] = [];
const laneJob = durable({ name: "lane-job", input: z.object({ id: z.string() }), concurrency: { key: () => "lane", limit: 1 } }, async ({ id }, step) =>
  step.run("work", async () => {
    began.push(id);
    if (id === "holder") await gate;
    return id;
  }),
);

let e2e: E2e;
beforeAll(async () => {
  e2e = await createE2e({ endpoints: peers(), workflows: () => [tenantJob, laneJob] });
});
afterAll(() => e2e.close());

describe("durable({ concurrency }) through the Lambda handler", () => {
  it("24 runs over 2 tenants with limit 2: never more than 2 at once per tenant, every run completes", async () => {
    const ids = Array.from({ length: 24 }, (_, n) => `job-${n}`);
    for (const [n, id] of ids.entries()) await e2e.client.start(tenantJob, { runId: id, input: { tenant: n < 12 ? "t1" : "t2", n } });
    await e2e.mapping({ duplicate: true }).runUntil(e2e.finished(ids), { what: "every job to finish", pollers: 3 });
    for (const id of ids) expect((await e2e.run(id)).status).toBe("completed");
    expect(peak.get("t1")).toBeLessThanOrEqual(2);
    expect(peak.get("t2")).toBeLessThanOrEqual(2);
    expect(e2e.lines("wake").some((l) => l.outcome === "queued")).toBe(true);
  });

  it("runs waiting for the slot are `queued` in the table and listed by that status; a cancel ends one at once; the other runs next", async () => {
    await e2e.client.start(laneJob, { runId: "holder", input: { id: "holder" } });
    const driving = e2e.mapping().runUntil(e2e.finished(["holder", "w1", "w2"]), { what: "the lane to drain", pollers: 3, deadlineMs: 30_000 });
    await until("the holder to take the slot", () => began.includes("holder"));
    for (const id of ["w1", "w2"]) await e2e.client.start(laneJob, { runId: id, input: { id } });
    await until("w1 and w2 to queue", async () => (await e2e.run("w1")).status === "queued" && (await e2e.run("w2")).status === "queued");
    expect(await e2e.run("w1")).toMatchObject({ status: "queued", waitingFor: "queued:lane-job:lane" });
    expect((await e2e.client.list({ status: "queued" })).runs.map((r) => r.runId)).toEqual(["w2", "w1"]);
    expect((await e2e.client.list({ status: "suspended" })).runs.map((r) => r.runId)).not.toContain("w1");
    expect((await e2e.client.cancel("w2", { reason: "not needed" })).outcome).toBe("cancelled");
    expect(await e2e.run("w2")).toMatchObject({ status: "cancelled" }); // at once
    openGate();
    await driving;
    expect(await e2e.run("w1")).toMatchObject({ status: "completed", result: "w1" });
    expect(began).toEqual(["holder", "w1"]);
    expect((await e2e.client.list({ status: "queued" })).runs).toEqual([]);
  });
});
