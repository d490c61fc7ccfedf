/**
 * Flow control per key on the AWS runtime: the real Lambda handler fed by the SQS event source
 * loop (two pollers, every wake delivered twice), slots and queue in DynamoDB Local. At most
 * `limit` runs of one key execute at once, measured by the step bodies; every run completes.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { durable } from "../../lib/index.ts";
import { peers } from "./endpoints.ts";
import { type E2e, createE2e } from "./harness.ts";

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

let e2e: E2e;
beforeAll(async () => {
  e2e = await createE2e({ endpoints: peers(), workflows: () => [tenantJob] });
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
});
