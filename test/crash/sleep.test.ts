/**
 * SIGKILL of a worker whose run sleeps (`crash-nap`: before → sleep "cool-off" → after), then a
 * restart on the same journal file: the run must wake at its recorded wake time — not before it,
 * and not much after it — and finish, with each step body executed once.
 */
import { type ExpectStatic, describe, it } from "vitest";
import type { RunMeta } from "waymark";
import { type CrashLab, withLab } from "./harness.ts";
import { until } from "../support/until.ts";
import { napFlow } from "./workflows.ts";

/**
 * How late a restarted worker may finish a due run: after the later of the wake time and the
 * moment the worker was up. Its loop polls every 50 ms; the rest is slack for a loaded machine.
 */
const WAKE_SLACK_MS = 1_500;


async function sleepWakeAt(lab: CrashLab, runId: string): Promise<number> {
  const record = (await lab.records(runId)).find((r) => r.type === "step" && r.kind === "sleep" && r.stepId === "cool-off");
  if (record?.type !== "step" || record.kind !== "sleep") throw new Error(`run ${runId} has no sleep record`);
  return record.wakeAt;
}

describe.concurrent("durable sleep: SIGKILL and restart", () => {
  it("(c) SIGKILL while the run is suspended in a sleep: a restarted worker wakes it at its wake time (not at an early wake) and finishes it", async ({ expect }) => {
    await withLab(async (lab) => {
      const runId = "nap-1";
      await lab.client.start(napFlow, { runId, input: { napMs: 3_000 } });
      const first = lab.spawn({ label: "1", runs: [runId] });
      await until("the run to suspend in its sleep", async () => {
        const run = await lab.client.get(runId);
        return run.status === "suspended" && run.waitingFor === "sleep:cool-off";
      });
      first.child.kill("SIGKILL");
      await first.exit;
      const wakeAt = await sleepWakeAt(lab, runId);
      expect(Date.now(), "the kill landed before the wake time").toBeLessThan(wakeAt);

      const second = lab.spawn({ label: "2", runs: [runId] });
      const ready = await until("worker 2 to be ready", () => lab.events().find((e) => e.worker === "2" && e.type === "ready"));
      // An early wake (a duplicate, a watchdog) must be re-checked against the journal, not obeyed.
      await lab.wakes.schedule({ runId, at: Date.now(), reason: "watchdog", key: "early" });
      const run = await lab.finished(runId);
      await second.exit;

      expect(first.exited?.signal).toBe("SIGKILL");
      expect(second.exited?.code, second.describe()).toBe(0);
      expect(run.status, JSON.stringify(run)).toBe("completed");
      expectWokeOnTime(expect, lab, runId, run, wakeAt, ready.at);
      expect(lab.log.of(runId, "before").map((e) => e.worker)).toEqual(["1"]);
      expect(lab.log.of(runId, "after").map((e) => e.worker)).toEqual(["2"]);
      console.log(`sleep: restart up ${wakeAt - ready.at} ms before the wake time; woke ${(lab.log.of(runId, "after")[0]?.at ?? NaN) - wakeAt} ms after it, finished ${(run.finishedAt ?? NaN) - wakeAt} ms after it`);
    });
  });

  it("(c) a worker restarted after the wake time has passed wakes the overdue run at once", async ({ expect }) => {
    await withLab(async (lab) => {
      const runId = "nap-2";
      await lab.client.start(napFlow, { runId, input: { napMs: 500 } });
      const first = lab.spawn({ label: "1", runs: [runId] });
      await until("the run to suspend in its sleep", async () => (await lab.client.get(runId)).status === "suspended");
      first.child.kill("SIGKILL");
      await first.exit;
      const wakeAt = await sleepWakeAt(lab, runId);
      await until("the wake time to pass with no worker alive", () => Date.now() > wakeAt + 100);

      const second = lab.spawn({ label: "2", runs: [runId] });
      const ready = await until("worker 2 to be ready", () => lab.events().find((e) => e.worker === "2" && e.type === "ready"));
      const run = await lab.finished(runId);
      await second.exit;

      expect(second.exited?.code, second.describe()).toBe(0);
      expect(run.status, JSON.stringify(run)).toBe("completed");
      expectWokeOnTime(expect, lab, runId, run, wakeAt, ready.at);
      expect(lab.log.of(runId, "after").map((e) => e.worker)).toEqual(["2"]);
    });
  });

  it("(c) SIGKILL as the run suspends, before the sleep is recorded: the restart sleeps again and finishes", async ({ expect }) => {
    await withLab(async (lab) => {
      const runId = "nap-3";
      await lab.client.start(napFlow, { runId, input: { napMs: 500 } });
      const first = lab.spawn({ label: "1", runs: [runId], crashAt: "blocked:cool-off" });
      await first.exit;
      expect(await lab.records(runId), "nothing recorded of the sleep").not.toContainEqual(expect.objectContaining({ stepId: "cool-off" }));

      const second = lab.spawn({ label: "2", runs: [runId] });
      const ready = await until("worker 2 to be ready", () => lab.events().find((e) => e.worker === "2" && e.type === "ready"));
      const run = await lab.finished(runId);
      await second.exit;

      expect(first.exited?.signal, first.describe()).toBe("SIGKILL");
      expect(second.exited?.code, second.describe()).toBe(0);
      expect(run.status, JSON.stringify(run)).toBe("completed");
      expectWokeOnTime(expect, lab, runId, run, await sleepWakeAt(lab, runId), ready.at);
      expect(lab.log.of(runId, "before").map((e) => e.worker)).toEqual(["1"]);
    });
  });
});

function expectWokeOnTime(expect: ExpectStatic, lab: CrashLab, runId: string, run: RunMeta, wakeAt: number, readyAt: number): void {
  const due = Math.max(wakeAt, readyAt);
  const after = lab.log.of(runId, "after");
  expect(after).toHaveLength(1);
  expect(after[0]?.at, "the step after the sleep ran at or after the wake time").toBeGreaterThanOrEqual(wakeAt);
  expect(run.finishedAt, "the run finished at or after the wake time").toBeGreaterThanOrEqual(wakeAt);
  expect(run.finishedAt, `the run finished within ${WAKE_SLACK_MS} ms of the wake time (or of the restart, if later)`).toBeLessThanOrEqual(due + WAKE_SLACK_MS);
}
