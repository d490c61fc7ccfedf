/**
 * Corners of recovery after a crash: a restarted local worker must pick up a dead worker's run
 * within a few seconds, not after lease expiry plus the watchdog (15.7 s and 6.1 s were
 * measured before lib/local/runtime.ts handled these cases).
 */
import BetterSqlite3 from "better-sqlite3";
import { describe, it } from "vitest";
import { TERMINAL_STATUSES } from "waymark";
import { type CrashLab, processState, withLab } from "./harness.ts";
import { until } from "../support/until.ts";
import { napFlow, parentFlow } from "./workflows.ts";

/** The keys of a run's rows in the journal file's wake table. */
function wakeKeys(journal: string, runId: string): string[] {
  const db = new BetterSqlite3(journal, { readonly: true });
  try {
    return db.prepare<[string], string>("SELECT key FROM wakes WHERE run_id = ? ORDER BY key").pluck().all(runId);
  } finally {
    db.close();
  }
}

/** What "picks the run up quickly" means here: tsx start-up, recovery, a 100 ms sleep, slack. */
const QUICK_MS = 3_000;

async function finishesQuickly(lab: CrashLab, runId: string): Promise<void> {
  await until(`the restarted worker to finish run ${runId} within ${QUICK_MS} ms of being ready`, async () => {
    const ready = lab.events().find((e) => e.worker === "2" && e.type === "ready");
    const run = await lab.client.get(runId);
    if (TERMINAL_STATUSES.has(run.status)) return run;
    if (ready && Date.now() > ready.at + QUICK_MS) throw new Error(`run ${runId} still ${run.status} ${QUICK_MS} ms after the restart was ready`);
    return undefined;
  });
}

describe.concurrent("recovery after a crash, in the corners", () => {
  // kill(pid, 0) succeeds for a zombie (a SIGKILLed process its parent has not reaped yet), so
  // isDeadLocalOwner also reads the process state from /proc.
  it("a restart picks up a run whose dead owner is still a zombie (not yet reaped by its parent)", async ({ expect }) => {
    await withLab(async (lab) => {
      const runId = "zombie-owner";
      await lab.client.start(napFlow, { runId, input: { napMs: 100 } });
      lab.spawn({ label: "1", runs: [runId], crashAt: "completed:before", unreaped: true });
      const pid = await until("worker 1 to report its pid", () => lab.workerPid("1"));
      await until(`worker 1 (pid ${pid}) to die and stay a zombie`, () => processState(pid) === "Z");
      expect((await lab.client.get(runId)).lease?.owner).toContain(`:${pid}:`);

      lab.spawn({ label: "2", runs: [runId] });
      await finishesQuickly(lab, runId);
    });
  });

  // A worker that dies after claiming a wake and before taking the lease leaves the run pending
  // with its wake hidden for 2 × the lease TTL; recover() wakes runs that are already due.
  it("a restart picks up a run whose wake the dead worker had claimed but not yet leased", async ({ expect }) => {
    await withLab(async (lab) => {
      const runId = "claimed-wake";
      await lab.client.start(napFlow, { runId, input: { napMs: 100 } });
      const first = lab.spawn({ label: "1", runs: [runId], crashAt: "before-lease" });
      await first.exit;
      expect(first.exited?.signal, first.describe()).toBe("SIGKILL");
      expect((await lab.client.get(runId)).status).toBe("pending");

      lab.spawn({ label: "2", runs: [runId] });
      await finishesQuickly(lab, runId);
    });
  });

  // A worker with a free slot invokes the child it starts at once, writing no wake for it
  // (InProcessStarts); if it dies before the child takes its lease, the child is due with no
  // wake and no lease, and a restart's recovery finds it stranded.
  it("a restart finishes a child whose in-process start died with its worker before the child took its lease", async ({ expect }) => {
    await withLab(async (lab) => {
      const runId = "in-process-parent";
      const child = `${runId}:pay`;
      await lab.client.start(parentFlow, { runId, input: { orderId: "o-in-process", amount: 5, chargeMs: 0 } });
      const first = lab.spawn({ label: "1", runs: [runId], crashAt: `before-lease:${child}` });
      await first.exit;
      expect(first.exited?.signal, first.describe()).toBe("SIGKILL");
      expect((await lab.client.get(child)).status).toBe("pending");
      expect(wakeKeys(lab.journal, child), "the child's start went to the worker's pool, not the wake table").toEqual([]);

      lab.spawn({ label: "2", runs: [runId, child] });
      await finishesQuickly(lab, child);
      await finishesQuickly(lab, runId);
      expect((await lab.client.get(runId)).status).toBe("completed");
      expect((await lab.client.get(child)).status).toBe("completed");
    });
  });
});
