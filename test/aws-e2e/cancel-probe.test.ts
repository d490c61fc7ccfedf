/**
 * On DynamoDB a cancellation probe is a GetItem of the run's `cancel` record sent beside an
 * append. The AWS runtime looks at most every 250 ms (`cancelProbeMs`), so a run of quick steps
 * costs one PutItem per step, not a PutItem and a GetItem; a cancel is still seen within 250 ms of
 * a step's end. Counted at the DynamoDB client, on DynamoDB Local. The second run's steps
 * move the harness clock on by 300 ms each, so every append there is due to look.
 */
import { z } from "zod";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { durable } from "waymark";
import { peers } from "./endpoints.ts";
import { type E2e, createE2e } from "./harness.ts";
import { e2eWorkflows } from "./workflows.ts";

let e2e: E2e;
const probes: string[] = [];
const slowClock = durable({ name: "slow-clock", input: z.object({ steps: z.number() }) }, async ({ steps }, step) => {
  for (let i = 0; i < steps; i++) await step.run(`tick-${i}`, () => void (e2e.clock.offset += 300));
  return steps;
});

beforeAll(async () => {
  e2e = await createE2e({ endpoints: peers(), workflows: (ledger) => [...e2eWorkflows(ledger).all, slowClock] });
  e2e.clients.dynamodb.middlewareStack.add(
    (next) => async (args) => {
      const sk = (args.input as { Key?: { sk?: { S?: string } } }).Key?.sk?.S;
      if (sk !== undefined && sk.endsWith("cancel")) probes.push(sk);
      return next(args);
    },
    { step: "initialize", name: "countCancelProbes" },
  );
});
afterAll(() => e2e.close());

describe("the AWS runtime's cancellation probe", () => {
  it("is not a read per step: thirty quick steps look for a cancel about once per 250 ms, not thirty times", async () => {
    const runId = "probe-1";
    await e2e.client.start("steps-flow", { runId, input: { steps: 30, holdMs: 0 } });
    const began = Date.now();
    await e2e.mapping().runUntil(e2e.finished([runId]), { what: "the run to finish" });
    const elapsed = Date.now() - began;
    expect((await e2e.run(runId)).status).toBe("completed");
    expect(e2e.ledger.repeated(runId)).toEqual([]);
    expect(probes.length).toBeLessThanOrEqual(Math.floor(elapsed / 250) + 1);
    expect(probes.length).toBeLessThan(30);
  });

  it("looks once 250 ms have passed since it last did: each append of steps 300 ms apart looks", async () => {
    probes.length = 0;
    const runId = "probe-2";
    await e2e.client.start("slow-clock", { runId, input: { steps: 4 } });
    await e2e.mapping().runUntil(e2e.finished([runId]), { what: "the run to finish" });
    expect((await e2e.run(runId)).status).toBe("completed");
    expect(probes.length).toBeGreaterThanOrEqual(4);
  });
});
