/**
 * `step.continueAsNew` under SIGKILL. A loop over items 0…11 in batches of 4 continues as new
 * after each batch, so the run has three incarnations (journals `<runId>`, `<runId>~2`,
 * `<runId>~3`). Kills land at and around the switch: inside the last step of a batch (after its
 * effect, before its record), right after that step is recorded, just before the switch is
 * written, and right after it is written but before the start wake is sent. Each time a fresh
 * worker carries on, and in the end: the run completed with the right sum, no item ran twice
 * except one killed inside its body (again with the same key), and each incarnation's journal
 * holds exactly its own batch.
 */
import { describe, it, expect } from "vitest";
import { type CrashLab, withLab } from "./harness.ts";
import { until } from "../support/until.ts";
import { loopFlow } from "./workflows.ts";

const TOTAL = 12;
const BATCH = 4;
const INCARNATIONS = TOTAL / BATCH;

const journalId = (runId: string, k: number) => (k === 1 ? runId : `${runId}~${k}`);
const incarnationOf = (item: number) => Math.floor(item / BATCH) + 1;

async function killedAt(lab: CrashLab, label: string, runId: string, crashAt: string): Promise<void> {
  const worker = lab.spawn({ label, runs: [runId], crashAt });
  await worker.exit;
  expect(worker.exited?.signal, worker.describe()).toBe("SIGKILL");
}

async function finishes(lab: CrashLab, label: string, runId: string): Promise<void> {
  const worker = lab.spawn({ label, runs: [runId] });
  await worker.exit;
  expect(worker.exited?.code, worker.describe()).toBe(0);
}

/** The run's end and journals, and every item's executions; `reran` maps an item that ran twice to its two workers. */
async function assertEachBatchOnce(lab: CrashLab, runId: string, reran: Record<number, string[]>): Promise<void> {
  const run = await lab.client.get(runId);
  expect(run.status).toBe("completed");
  expect(run.incarnation).toBe(INCARNATIONS);
  const sum = Array.from({ length: TOTAL }, (_, i) => 2 * i).reduce((a, b) => a + b, 0);
  expect(run.result).toEqual({ sum, lastCursor: TOTAL - BATCH });

  for (let i = 0; i < TOTAL; i++) {
    const runs = lab.log.of(runId, `item-${i}`);
    const key = `${journalId(runId, incarnationOf(i))}/item-${i}`;
    expect(runs.map((e) => e.key), `item-${i}'s keys`).toEqual(runs.map(() => key));
    if (reran[i]) expect(runs.map((e) => e.worker), `item-${i} ran again after a kill inside its body`).toEqual(reran[i]);
    else expect(runs, `item-${i} ran once`).toHaveLength(1);
  }

  for (let k = 1; k <= INCARNATIONS; k++) {
    const { entries } = await lab.client.history(runId, { incarnation: k });
    const steps = entries.flatMap((e) => (e.record?.type === "step" ? [e.record] : []));
    const batch = Array.from({ length: BATCH }, (_, j) => (k - 1) * BATCH + j);
    expect(steps.map((r) => r.stepId), `incarnation ${k}'s journal`).toEqual(batch.map((i) => `item-${i}`));
    for (const r of steps) expect(r).toMatchObject({ kind: "run", status: "ok", result: 2 * Number(r.stepId.slice("item-".length)) });
  }
}

describe.concurrent("step.continueAsNew under SIGKILL", () => {
  it("killed inside the last step of batch 1, right after the last step of batch 2 is recorded, and right after the switch to incarnation 3 is written", async () => {
    await withLab(async (lab) => {
      const runId = "loop-1";
      await lab.client.start(loopFlow, { runId, input: { cursor: 0, total: TOTAL, batch: BATCH, sum: 0, itemMs: 10 } });

      await killedAt(lab, "1", runId, "inside:item-3");
      expect((await lab.client.get(runId)).incarnation ?? 1).toBe(1);

      await killedAt(lab, "2", runId, "completed:item-7");
      expect((await lab.client.get(runId)).incarnation).toBe(2);

      await killedAt(lab, "3", runId, `continued:${runId}`);
      // Switched over, and nobody has run the new incarnation yet.
      expect((await lab.client.get(runId)).incarnation).toBe(3);
      expect(lab.log.of(runId, "item-8")).toEqual([]);

      await finishes(lab, "4", runId);
      await assertEachBatchOnce(lab, runId, { 3: ["1", "2"] });
    });
  });

  it("killed right after the last step of batch 1 is recorded, then just before the switch is written", async () => {
    await withLab(async (lab) => {
      const runId = "loop-2";
      await lab.client.start(loopFlow, { runId, input: { cursor: 0, total: TOTAL, batch: BATCH, sum: 0, itemMs: 10 } });

      await killedAt(lab, "1", runId, "completed:item-3");
      await killedAt(lab, "2", runId, `continue:${runId}`);
      // Not switched: incarnation 1 is replayed and ends in the switch again.
      expect((await lab.client.get(runId)).incarnation ?? 1).toBe(1);
      expect(lab.log.of(runId, "item-4")).toEqual([]);

      await finishes(lab, "3", runId);
      await assertEachBatchOnce(lab, runId, {});
    });
  });
});

describe("step.continueAsNew without a crash", () => {
  // The switch schedules the next incarnation's start wake while the invocation that wrote it is
  // still in the local wake pool; the pool must not drop that wake as "already executing here"
  // (lib/wake-loop.ts), or each incarnation waits for the watchdog's next sweep.
  it("each new incarnation starts at once, not at the watchdog's next sweep", async () => {
    await withLab(async (lab) => {
      const runId = "loop-prompt";
      await lab.client.start(loopFlow, { runId, input: { cursor: 0, total: TOTAL, batch: BATCH, sum: 0, itemMs: 10 } });
      // A watchdog that never sweeps during the test: only the switch's own wake can start the next incarnation.
      const worker = lab.spawn({ label: "1", runs: [runId], watchdogMs: 60_000 });
      const ready = await until("the worker to be ready", () => lab.events().find((e) => e.type === "ready"));
      await until(
        `run ${runId} to complete within 3 s of the worker being ready`,
        async () => {
          const run = await lab.client.get(runId);
          if (run.status === "completed") return true;
          if (Date.now() > ready.at + 3_000) throw new Error(`run ${runId} is ${run.status} in incarnation ${run.incarnation} 3 s after the worker was ready`);
          return false;
        },
        10_000,
      );
      await worker.exit;
      expect(worker.exited?.code, worker.describe()).toBe(0);
      await assertEachBatchOnce(lab, runId, {});
    });
  });
});
