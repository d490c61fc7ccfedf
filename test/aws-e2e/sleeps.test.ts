/**
 * Durable sleeps on the AWS runtime. A sleep of 15 minutes or less is an SQS message with
 * `DelaySeconds` (real, on the emulator: a 2 s sleep takes 2 s); a longer one is a one-time
 * schedule on the Scheduler STAND-IN (no local peer; see scheduler-stand-in.ts), which fires
 * once the harness clock is moved past it. Both wake the run and it completes.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { scheduleName } from "../../lib/aws/scheduler-wakes.ts";
import { parseWakeMessage } from "../../lib/aws/wake-message.ts";
import { peers } from "./endpoints.ts";
import { type E2e, createE2e } from "./harness.ts";
import { e2eWorkflows } from "./workflows.ts";

let e2e: E2e;
beforeAll(async () => {
  e2e = await createE2e({ endpoints: peers(), workflows: (ledger) => e2eWorkflows(ledger).all });
});
afterAll(() => e2e.close());

const MINUTE = 60_000;

/** The wake messages the runtime sent for one run and key, with their delays. */
function sentWakes(runId: string, key: string): number[] {
  return e2e.sent.filter((m) => {
    const wake = parseWakeMessage(m.body);
    return wake.runId === runId && wake.key === key;
  }).map((m) => m.delaySeconds);
}

describe("sleeps under and over 15 minutes", () => {
  it("a 2 s sleep rides an SQS delay, a 20 min sleep a Scheduler schedule; both wake and complete", async () => {
    const loop = e2e.mapping();
    await e2e.client.start("nap-flow", { runId: "nap-short", input: { nap: "2s" } });
    await e2e.client.start("nap-flow", { runId: "nap-long", input: { nap: "20m" } });
    const began = Date.now();

    await loop.runUntil(async () => (await e2e.run("nap-short")).status === "completed" && (await e2e.run("nap-long")).status === "suspended", {
      what: "the short nap to complete and the long one to suspend",
    });
    expect(Date.now() - began, "a real 2 s SQS delay").toBeGreaterThanOrEqual(1_900);
    // Short: one SQS message delayed by 2 s, and no schedule.
    expect(sentWakes("nap-short", "sleep:nap")).toEqual([2]);
    expect(e2e.scheduler.calls.filter((c) => c.name.startsWith("nap-short"))).toEqual([]);
    // Long: no SQS message, one schedule named from run and step, 20 minutes ahead.
    expect(sentWakes("nap-long", "sleep:nap")).toEqual([]);
    const name = scheduleName("nap-long", "sleep:nap");
    expect(e2e.scheduler.calls).toEqual([expect.objectContaining({ command: "Create", name })]);
    const schedule = e2e.scheduler.schedules.get(name);
    const wakeAt = (await e2e.run("nap-long")).wakeAt ?? 0;
    expect(schedule?.fireAt).toBe(Math.ceil(wakeAt / 1000) * 1000);
    expect(wakeAt - e2e.clock.now()).toBeGreaterThan(19 * MINUTE);

    // Nothing happens until the clock passes the schedule's time.
    await e2e.advance(19 * MINUTE);
    expect(e2e.scheduler.fired).toEqual([]);
    await e2e.advance(MINUTE + 1_000);
    expect(e2e.scheduler.fired.map((f) => f.name)).toEqual([name]);
    expect(e2e.scheduler.schedules.size, "ActionAfterCompletion DELETE").toBe(0);

    await loop.runUntil(e2e.finished(["nap-long"]), { what: "the long nap to complete" });
    for (const runId of ["nap-short", "nap-long"]) {
      expect((await e2e.run(runId)).status).toBe("completed");
      expect([...e2e.ledger.counts(runId)]).toEqual([[`${runId}/before`, 1], [`${runId}/after`, 1]]);
    }
  });

  it("a schedule that fires early (within its minute) is topped up with an SQS delay, not run early", async () => {
    const loop = e2e.mapping();
    await e2e.client.start("nap-flow", { runId: "nap-early", input: { nap: "30m" } });
    await loop.runUntil(async () => (await e2e.run("nap-early")).status === "suspended", { what: "the nap to suspend" });
    const name = scheduleName("nap-early", "sleep:nap");
    const fireAt = e2e.scheduler.schedules.get(name)?.fireAt ?? 0;

    e2e.clock.offset += fireAt - e2e.clock.now() - 2_000; // 2 s before the schedule's time
    expect(await e2e.scheduler.fireDue(60_000)).toBe(1);
    await loop.runUntil(e2e.finished(["nap-early"]), { what: "the early-woken nap to complete" });

    const early = e2e.lines("wake", "nap-early").filter((l) => l.outcome === "early");
    expect(early).toHaveLength(1);
    expect(early[0]?.delaySeconds).toBeGreaterThanOrEqual(1);
    expect(early[0]?.delaySeconds).toBeLessThanOrEqual(2);
    const completedAt = (await e2e.run("nap-early")).finishedAt ?? 0;
    expect(completedAt, "not before the sleep's end").toBeGreaterThanOrEqual(fireAt - 1_000);
    expect(e2e.ledger.counts("nap-early").get("nap-early/after")).toBe(1);
  });
});
