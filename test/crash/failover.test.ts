/**
 * Failover between worker processes on one journal file (lib/local/failover.ts), one mechanism per
 * test. Worker A holds run `crash-fan`'s lease inside `fan-1` (a 60 s body in A, 50 ms elsewhere);
 * worker B is the survivor. Leases and watchdog ticks are set far longer than each test's
 * deadline wherever they are not the mechanism under test, so that only the mechanism can explain
 * what B does:
 *
 *   - a dead owner: B, idle, re-starts A's body as soon as A is SIGKILLed (the death notice);
 *   - a frozen owner (SIGSTOP) is alive: B leaves its lease alone, duplicate wakes and all, until
 *     the lease expires, and then takes the run at once (the expiry timer);
 *   - a recycled pid: a lease naming a pid that now belongs to another live process (another start
 *     time) is a dead owner's; naming that process with its own start time, it is a live one's;
 *   - ready means ready: a restarted worker has taken a dead owner's run (or holds its wake) when
 *     `start()` resolves.
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import BetterSqlite3 from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { type CrashLab, processState, withLab } from "./harness.ts";
import { until } from "../support/until.ts";
import { fanFlow } from "./workflows.ts";

/** Longer than any test here runs: neither a lease expiry nor a watchdog tick can explain what a test sees. */
const LONG_MS = 300_000;
const FAN = { fanMs: { A: [60_000], "*": [50] }, afterMs: 10, settleMs: 50 };

/** Starts worker A on a fresh `crash-fan` run and waits until its 60 s `fan-1` body is running. */
async function aInsideFan(lab: CrashLab, runId: string, a: { leaseTtlMs?: number; freezeAt?: string } = {}) {
  const worker = lab.spawn({ label: "A", runs: [runId], leaseTtlMs: a.leaseTtlMs ?? LONG_MS, watchdogMs: LONG_MS, ...(a.freezeAt ? { freezeAt: a.freezeAt } : {}) });
  const owner = await until("worker A to be ready", () => lab.workerOwner("A"));
  await lab.client.start(fanFlow, { runId, input: FAN });
  await until("A to run fan-1", () => lab.log.of(runId, "fan-1").some((e) => e.worker === "A"));
  return { worker, owner };
}

function bodiesOf(lab: CrashLab, runId: string, worker: string): number[] {
  return lab.log.of(runId, "fan-1").filter((e) => e.worker === worker).map((e) => e.at);
}

/** The start time of a live process, as owner-life.ts reads it (field 22 of /proc/<pid>/stat). */
function startTimeOf(pid: number): string {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const field = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
  if (!field) throw new Error(`no start time for pid ${pid}`);
  return field;
}

/** Rewrites the run's lease owner in the journal file, as if another process held it. */
function setLeaseOwner(journal: string, runId: string, owner: string): void {
  const db = new BetterSqlite3(journal);
  try {
    db.pragma("busy_timeout = 5000");
    db.prepare("UPDATE runs SET lease_owner = ? WHERE run_id = ?").run(owner, runId);
  } finally {
    db.close();
  }
}

describe.concurrent("failover between local workers", () => {
  it("an idle survivor re-starts a SIGKILLed owner's body at once, long before its lease would expire", { timeout: 90_000 }, async ({ expect }) => {
    await withLab(async (lab) => {
      const runId = "dead-owner";
      const a = await aInsideFan(lab, runId);
      lab.spawn({ label: "B", runs: [runId], leaseTtlMs: LONG_MS, watchdogMs: LONG_MS });
      const readyB = await until("worker B to be ready", () => lab.events().find((e) => e.worker === "B" && e.type === "ready"));
      const lease = (await lab.client.get(runId)).lease;
      expect(lease?.owner.startsWith(`${a.owner}:`), "A holds the lease while B is up").toBe(true);
      expect(bodiesOf(lab, runId, "B"), "B left A's run alone while A lived").toEqual([]);

      const killedAt = Date.now();
      a.worker.child.kill("SIGKILL");
      const restarted = await until("B to re-start fan-1", () => bodiesOf(lab, runId, "B")[0], 30_000);
      expect(restarted).toBeGreaterThanOrEqual(killedAt);
      expect(readyB.at, "B was ready before the kill: not start-up recovery").toBeLessThan(killedAt);
      expect(restarted, "before A's lease would have expired").toBeLessThan(lease?.expiresAt ?? 0);

      const run = await lab.finished(runId);
      expect(run.status).toBe("completed");
      const recovered = lab.events().filter((e) => e.worker === "B" && e.type === "invocation" && e.runId === runId);
      expect(recovered[0]?.result).toBe("suspended"); // fan-out done, then the durable sleep
      console.log(`dead owner: kill → B re-started fan-1 after ${restarted - killedAt} ms (lease had ${(lease?.expiresAt ?? 0) - killedAt} ms left)`);
    });
  });

  it("a frozen (SIGSTOP) owner is alive: its lease holds against duplicate wakes until it expires, then a survivor takes the run at once", { timeout: 90_000 }, async ({ expect }) => {
    await withLab(async (lab) => {
      const runId = "frozen-owner";
      // A's lease is short (the mechanism); B's own settings are long, so B's scan tick is minutes away.
      // 12 s: B starts (a couple of seconds) and sees the lease well before it expires.
      const a = await aInsideFan(lab, runId, { leaseTtlMs: 12_000, freezeAt: "started:fan-1" });
      const pidA = a.worker.child.pid ?? -1;
      await until(`A (pid ${pidA}) to be stopped`, () => processState(pidA) === "T");
      lab.spawn({ label: "B", runs: [runId], leaseTtlMs: LONG_MS, watchdogMs: LONG_MS });
      await until("worker B to be ready", () => lab.workerOwner("B"));
      const expiresAt = (await lab.client.get(runId)).lease?.expiresAt ?? 0;

      // Until the lease expires: a duplicate wake every 50 ms; B must answer each "busy".
      let duplicates = 0;
      while (Date.now() < expiresAt - 200) {
        await lab.wakes.schedule({ runId, at: Date.now(), reason: "watchdog", key: `duplicate-${duplicates++ % 2}` });
        await new Promise((r) => setTimeout(r, 50));
      }
      const busy = lab.events().filter((e) => e.worker === "B" && e.type === "invocation" && e.runId === runId);
      expect(busy.length, "B tried the run").toBeGreaterThan(0);
      expect(new Set(busy.map((e) => e.result))).toEqual(new Set(["busy"]));
      expect((await lab.client.get(runId)).lease?.owner.startsWith(`${a.owner}:`), "the frozen owner still holds the lease").toBe(true);

      const takenAt = await until("B to take the run once the lease expired", () => bodiesOf(lab, runId, "B")[0], 30_000);
      expect(takenAt, "not before the lease expired").toBeGreaterThanOrEqual(expiresAt);
      // The wake A claimed (just before its body started) reappears 2 × its lease TTL after the
      // claim; B must not have waited for that: the lease's expiry itself woke B.
      const bodyA = bodiesOf(lab, runId, "A")[0] ?? 0;
      expect(takenAt, "before A's claimed wake reappeared").toBeLessThan(bodyA + 2 * 12_000 - 1_000);
      expect(processState(pidA), "A was still frozen").toBe("T");
      a.worker.child.kill("SIGCONT"); // thawed, A finds its lease gone (its 60 s body is left to the lab's disposal)
      const run = await lab.finished(runId);
      expect(run.status).toBe("completed");
      console.log(`frozen owner: ${duplicates} duplicate wakes answered busy; B took the run ${takenAt - expiresAt} ms after the lease expired`);
    });
  });

  it("a recycled pid: a lease naming a pid now used by another process (another start time) is taken at start-up; naming that process itself, it is left alone", { timeout: 90_000 }, async ({ expect }) => {
    await withLab(async (lab) => {
      const runId = "recycled-pid";
      const a = await aInsideFan(lab, runId);
      a.worker.child.kill("SIGKILL");
      await a.worker.exit;
      const ownerOfA = (await lab.client.get(runId)).lease?.owner ?? "";
      // local:<host>:<pid>:<start>.<world>:<id>:<invocation>
      const parts = ownerOfA.split(":");
      const [startA, world] = (parts[3] ?? "").split(".");
      const stranger = spawn("sleep", ["120"], { stdio: "ignore" });
      try {
        const pid = stranger.pid ?? -1;
        const named = (start: string) => [...parts.slice(0, 2), String(pid), `${start}.${world}`, ...parts.slice(4)].join(":");

        // 1. The stranger's pid with the stranger's own start time: a live owner.
        setLeaseOwner(lab.journal, runId, named(startTimeOf(pid)));
        const b = lab.spawn({ label: "B", runs: [runId], leaseTtlMs: LONG_MS, watchdogMs: LONG_MS, noteReady: true });
        const readyB = await until("worker B to be ready", () => lab.events().find((e) => e.worker === "B" && e.type === "ready"));
        expect(readyB.runs?.[runId]?.leaseOwner, "start-up recovery left a live owner's lease").toBe(named(startTimeOf(pid)));
        await lab.wakes.schedule({ runId, at: Date.now(), reason: "watchdog", key: "duplicate" });
        await until("B to answer a wake for the run", () => lab.events().some((e) => e.worker === "B" && e.type === "invocation" && e.runId === runId));
        expect(lab.events().filter((e) => e.worker === "B" && e.type === "invocation").map((e) => e.result)).toEqual(["busy"]);
        expect(bodiesOf(lab, runId, "B")).toEqual([]);

        // 2. The same pid with A's start time: A is gone, its pid reused. A new worker takes the run as it starts
        // (B goes first, so that the run is C's to take).
        b.child.kill("SIGKILL");
        await b.exit;
        setLeaseOwner(lab.journal, runId, named(startA ?? ""));
        lab.spawn({ label: "C", runs: [runId], leaseTtlMs: LONG_MS, watchdogMs: LONG_MS, noteReady: true });
        const readyC = await until("worker C to be ready", () => lab.events().find((e) => e.worker === "C" && e.type === "ready"));
        const atReady = readyC.runs?.[runId];
        expect(atReady?.leaseOwner?.startsWith(`${readyC.owner}:`) || atReady?.wakes.includes("recover"), JSON.stringify(atReady)).toBe(true);
        expect(processState(pid), "the stranger lives on").not.toBeUndefined();
        const run = await lab.finished(runId);
        expect(run.status).toBe("completed");
      } finally {
        stranger.kill("SIGKILL");
      }
    });
  });

  it("ready means ready: a restarted worker holds a dead owner's run (or its wake) when start() resolves, and re-starts its body", { timeout: 90_000 }, async ({ expect }) => {
    await withLab(async (lab) => {
      const runId = "ready-after-recovery";
      const a = await aInsideFan(lab, runId);
      a.worker.child.kill("SIGKILL");
      await a.worker.exit;
      lab.spawn({ label: "B", runs: [runId], leaseTtlMs: LONG_MS, watchdogMs: LONG_MS, noteReady: true });
      const ready = await until("worker B to be ready", () => lab.events().find((e) => e.worker === "B" && e.type === "ready"));
      const atReady = ready.runs?.[runId];
      expect(atReady?.leaseOwner?.startsWith(`${ready.owner}:`) || atReady?.wakes.includes("recover"), `B's lease or B's recovery wake at ready: ${JSON.stringify(atReady)}`).toBe(true);
      const first = await until("B to re-start fan-1", () => bodiesOf(lab, runId, "B")[0], 30_000);
      expect((await lab.finished(runId)).status).toBe("completed");
      console.log(`ready after recovery: ready → first re-started body ${first - ready.at} ms`);
    });
  });
});
