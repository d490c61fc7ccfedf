/**
 * `step.map` under SIGKILL: a worker dies in the middle of a map of 30 items with concurrency 5,
 * once right after some items were recorded and once inside an item's body (after its effect,
 * before its record); a fresh worker finishes the run. Exactly-once is read from the executions
 * log: an item recorded before the kill never runs again; an item that was running when the
 * worker died runs again, with the same idempotency key; every item is recorded once, and the
 * results come back in item order. The concurrency bound is measured from the bodies themselves
 * (`gauge.jsonl`, start and end of every body, in every process).
 */
import { readFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { describe, it, expect } from "vitest";
import { type CrashLab, withLab } from "./harness.ts";
import { until } from "../support/until.ts";
import { type GaugeLine, mapFlow } from "./workflows.ts";

const ITEMS = 30;
const CONCURRENCY = 5;

/** The most item bodies running at once, per process; a dead process's bodies end when the next process starts. */
function mostRunningAtOnce(lab: CrashLab): Map<number, number> {
  const file = join(lab.dir, "gauge.jsonl");
  const lines: GaugeLine[] = existsSync(file)
    ? readFileSync(file, "utf8")
        .split("\n")
        .filter((l) => l.length > 0)
        .map((l) => JSON.parse(l) as GaugeLine)
    : [];
  const running = new Set<string>();
  const most = new Map<number, number>();
  let pid: number | undefined;
  for (const line of lines) {
    // Workers run one after the other (the test waits for each to die): a new pid means the
    // previous process is gone, and its unfinished bodies with it.
    if (line.pid !== pid) running.clear();
    pid = line.pid;
    if (line.ev === "start") running.add(line.key);
    else running.delete(line.key);
    most.set(line.pid, Math.max(most.get(line.pid) ?? 0, running.size));
  }
  return most;
}

/** Returns the item step ids the journal held when the first worker had died (read before the second starts). */
async function crashThenFinish(lab: CrashLab, runId: string, crashAt: string): Promise<Set<string>> {
  await lab.client.start(mapFlow, { runId, input: { items: ITEMS, concurrency: CONCURRENCY, itemMs: 25 } });
  const first = lab.spawn({ label: "1", runs: [runId], crashAt });
  await first.exit;
  expect(first.exited?.signal, first.describe()).toBe("SIGKILL");
  expect((await lab.client.get(runId)).status, "the kill left the run unfinished").not.toBe("completed");
  const recordedBeforeKill = new Set((await lab.records(runId)).flatMap((r) => (r.type === "step" ? [r.stepId] : [])));
  expect(recordedBeforeKill.size, "some items were recorded before the kill").toBeGreaterThan(0);
  expect(recordedBeforeKill.size, "some items were left for after the kill").toBeLessThan(ITEMS);

  const second = lab.spawn({ label: "2", runs: [runId] });
  await until(`run ${runId} to complete`, async () => (await lab.client.get(runId)).status === "completed", 30_000);
  await second.exit;
  expect(second.exited?.code, second.describe()).toBe(0);
  return recordedBeforeKill;
}

/** What every map-under-kill run must show; returns the item indexes that ran twice. */
async function assertExactlyOnce(lab: CrashLab, runId: string, recordedByFirst: Set<string>): Promise<number[]> {
  const run = await lab.client.get(runId);
  const squares = Array.from({ length: ITEMS }, (_, i) => i * i);
  expect(run.result).toEqual({ squares, sum: squares.reduce((a, b) => a + b, 0) });

  // The journal: one record per item, ok, with its own result; then `sum`.
  const steps = (await lab.records(runId)).filter((r) => r.type === "step");
  const itemRecords = steps.filter((r) => r.stepId.startsWith("square["));
  expect(itemRecords.map((r) => r.stepId).sort()).toEqual(Array.from({ length: ITEMS }, (_, i) => `square[${i}]/square`).sort());
  for (const r of itemRecords) expect(r).toMatchObject({ kind: "run", status: "ok", result: Number(/\[(\d+)\]/.exec(r.stepId)?.[1]) ** 2 });
  expect(steps.filter((r) => r.stepId === "sum")).toHaveLength(1);

  const ranTwice: number[] = [];
  for (let i = 0; i < ITEMS; i++) {
    const stepId = `square[${i}]/square`;
    const runs = lab.log.of(runId, stepId);
    expect(runs.length, `${stepId} ran at least once`).toBeGreaterThanOrEqual(1);
    // Every execution got the same key, and no process ran an item twice.
    expect(new Set(runs.map((e) => e.key)), `${stepId}'s keys`).toEqual(new Set([`${runId}/${stepId}`]));
    expect(new Set(runs.map((e) => e.pid)).size, `${stepId}: one execution per process`).toBe(runs.length);
    if (recordedByFirst.has(stepId)) expect(runs.map((e) => e.worker), `${stepId} was recorded before the kill: never again`).toEqual(["1"]);
    else expect(runs.at(-1)?.worker, `${stepId} was recorded by the second worker`).toBe("2");
    if (runs.length > 1) ranTwice.push(i);
  }
  // Only bodies that were running when the worker died ran again: at most the bound.
  expect(ranTwice.length).toBeLessThanOrEqual(CONCURRENCY);
  expect(lab.log.of(runId, "sum")).toHaveLength(1);

  // The bound held in each process, and was reached (so the measure means something).
  const most = mostRunningAtOnce(lab);
  expect(most.size, "both processes ran item bodies").toBe(2);
  for (const [pid, n] of most) expect(n, `bodies at once in pid ${pid}`).toBeLessThanOrEqual(CONCURRENCY);
  expect(Math.max(...most.values())).toBe(CONCURRENCY);
  return ranTwice;
}

describe.concurrent("step.map under SIGKILL", () => {
  it("killed right after item 9 is recorded: recorded items never run again, the rest finish in order, at most 5 at once", async () => {
    await withLab(async (lab) => {
      const runId = "map-after-record";
      const recorded = await crashThenFinish(lab, runId, "completed:square[9]/square");
      expect(recorded).toContain("square[9]/square");
      const ranTwice = await assertExactlyOnce(lab, runId, recorded);
      // Item 9 itself was recorded: it is not among those that ran again.
      expect(ranTwice).not.toContain(9);
    });
  });

  it("killed inside item 12's body: that item runs again with the same key, everything else at most once per record", async () => {
    await withLab(async (lab) => {
      const runId = "map-inside-body";
      const recorded = await crashThenFinish(lab, runId, "inside:square[12]/square");
      expect(recorded).not.toContain("square[12]/square");
      const ranTwice = await assertExactlyOnce(lab, runId, recorded);
      expect(ranTwice).toContain(12);
      const twelve = lab.log.of(runId, "square[12]/square");
      expect(twelve.map((e) => e.worker)).toEqual(["1", "2"]);
      expect(twelve[0]?.key).toBe(twelve[1]?.key);
    });
  });
});
