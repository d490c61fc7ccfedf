/**
 * Two worker processes on one journal file at once, sharing ten runs of a five-leg relay with
 * short awaits and durable sleeps (so each run is in flight in one process or the other many
 * times over), while every unfinished run gets a duplicate wake every 20 ms: every run
 * completes and no step body executes twice.
 */
import { describe, expect, it } from "vitest";
import { type RunMeta, TERMINAL_STATUSES } from "waymark";
import { withLab } from "./harness.ts";
import { until } from "../support/until.ts";
import { relayFlow } from "./workflows.ts";

const RUNS = 10;
const LEGS = 5;

describe("two processes on one journal", () => {
  it("(d) two workers share 10 runs: every run completes, no step body executes twice, both did work", async () => {
    await withLab(async (lab) => {
      const runIds = Array.from({ length: RUNS }, (_, i) => `relay-${i + 1}`);
      const workers = ["A", "B"].map((label) => lab.spawn({ label, runs: runIds, concurrency: 3 }));
      // Start the runs once both are up, so neither gets a head start.
      await until("both workers to be ready", () => lab.events().filter((e) => e.type === "ready").length === 2);
      for (const runId of runIds) await lab.client.start(relayFlow, { runId, input: { legs: LEGS, legMs: 30, restMs: 40 } });

      let duplicates = 0;
      const runs = await until("every run to finish", async () => {
        const all = await Promise.all(runIds.map((id) => lab.client.get(id)));
        if (all.every((run) => TERMINAL_STATUSES.has(run.status))) return all;
        // Every wake delivered twice: an extra wake for each unfinished run, every poll, so both
        // processes keep trying to invoke the same runs at the same time.
        for (const run of all) {
          if (TERMINAL_STATUSES.has(run.status)) continue;
          await lab.wakes.schedule({ runId: run.runId, at: Date.now(), reason: "watchdog", key: "duplicate" });
          duplicates++;
        }
        return undefined;
      });
      await Promise.all(workers.map((w) => w.exit));

      for (const w of workers) expect(w.exited?.code, w.describe()).toBe(0);
      expect(runs.map((run: RunMeta) => [run.runId, run.status, run.result])).toEqual(
        runIds.map((id) => [id, "completed", [1, 2, 3, 4, 5]]),
      );

      const executions = lab.log.read();
      const perKey = new Map<string, string[]>();
      for (const e of executions) perKey.set(e.key, [...(perKey.get(e.key) ?? []), e.worker]);
      const twice = [...perKey].filter(([, by]) => by.length > 1);
      expect(twice, "step bodies executed more than once (key → workers)").toEqual([]);
      expect(perKey.size).toBe(RUNS * LEGS);

      // Both processes executed step bodies (how many runs moved between them is shown, not asserted).
      const byWorker = (label: string) => executions.filter((e) => e.worker === label).length;
      expect(byWorker("A"), "bodies executed by A").toBeGreaterThan(0);
      expect(byWorker("B"), "bodies executed by B").toBeGreaterThan(0);
      const shared = runIds.filter((id) => new Set(executions.filter((e) => e.runId === id).map((e) => e.worker)).size > 1);
      console.log(`two workers: A executed ${byWorker("A")} bodies, B ${byWorker("B")}; ${shared.length}/${RUNS} runs executed by both; ${duplicates} duplicate wakes`);
    });
  });
});
