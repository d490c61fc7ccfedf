/**
 * Issue 11, item 5 (concurrency per key), under SIGKILL: worker processes on one SQLite journal
 * share runs of `crash-lane` (`concurrency: { key: customer, limit: 2 }`, two steps whose bodies
 * take 150–300 ms and note their start and end in `lanes.jsonl`) while the test SIGKILLs them,
 * again and again, at varied moments when they are in the middle of a step body (so holding a
 * slot), and starts fresh ones. Two more workers die on their own right after writing a run's end
 * and before freeing its slot (`finished:` in worker.ts): a slot leaked by a run that will never
 * come back for it, which only its expiry can recover.
 *
 * Phase 1: 40 runs over 4 customers, started at once, through the storm. Phase 2, after the last
 * kill and once every leaked slot has expired: 3 more runs per customer started at once, no kills.
 *
 * Asserted:
 * (a) every run completes;
 * (b) per customer, never more than 2 runs' bodies at the same instant, measured from the bodies'
 *     own timelines: an interval [start, end] per body execution; a body whose process was killed
 *     has a start and no end, and stops running when its process died, so its interval is closed
 *     at the moment the test saw the process exit (an upper bound: the kill was sent just before,
 *     which can only over-count); and the limit was reached for every customer, in each phase;
 * (c) at the end, no slot row and no queue entry is left for any customer (read from the file);
 * (d) each leaked slot (its holder had ended, its row still there after its worker died) was taken
 *     over by another run (the row changed hands), which `takeSlot` allows only once it expired,
 *     and every customer ran 2 at once again in phase 2. A slot of a run killed mid-body comes
 *     back differently: the run itself is re-invoked (its dead owner's lease is broken) and
 *     re-takes its own slot, and the runs queued behind it complete.
 *
 * An expired slot wakes no queued run by itself: it is taken, or handed on, only when an
 * invocation of its customer next looks at the slots (a holder leaving, a start, a run coming
 * back). A customer whose every slot leaked would wait for its queued runs' recheck
 * (`QUEUED_RECHECK_MS`, 30 s) however short the lease; so here at most one slot leaks per
 * customer, and phase 2's starts come after the expiry.
 *
 * The seed is printed; `FLOW_SEED=<n>` replays the test's choices (body durations, pauses between
 * kills, which worker dies), though not the processes' own timing.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import BetterSqlite3 from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { type CrashLab, type WorkerProcess, withLab } from "./harness.ts";
import { until } from "../support/until.ts";
import { LANE_LIMIT, type LaneLine, laneFlow } from "./workflows.ts";
import { HANDOFF_MS } from "../../lib/core/flow-control.ts";
import { mulberry32 } from "../../lib/core/random.ts"; // seeded, so a failing schedule can be replayed

const CUSTOMERS = ["c0", "c1", "c2", "c3"];
const PHASE1_PER_CUSTOMER = 10;
const PHASE2_PER_CUSTOMER = 3;
const TEST_KILLS = 8;
const LEASE_TTL_MS = 2_000;
const WATCHDOG_MS = 200;
const WORKER_CONCURRENCY = 3;


function lanes(lab: CrashLab): LaneLine[] {
  const file = join(lab.dir, "lanes.jsonl");
  if (!existsSync(file)) return [];
  const out: LaneLine[] = [];
  for (const line of readFileSync(file, "utf8").split("\n")) {
    if (line.length === 0) continue;
    try {
      out.push(JSON.parse(line) as LaneLine);
    } catch {
      // A line being appended right now; the next read has it whole.
    }
  }
  return out;
}

/** Bodies started and not (yet) ended, per pid. */
function openBodies(lines: LaneLine[]): Map<number, Set<string>> {
  const open = new Map<number, Set<string>>();
  for (const l of lines) {
    const id = `${l.runId}/${l.stepId}`;
    const set = open.get(l.pid) ?? new Set<string>();
    open.set(l.pid, set);
    if (l.ev === "start") set.add(id);
    else set.delete(id);
  }
  return open;
}

interface Interval {
  customer: string;
  runId: string;
  stepId: string;
  pid: number;
  start: number;
  end: number;
  killed: boolean;
}

/** Every body execution as an interval; an unfinished one ends when its process was seen to exit. */
function intervals(lines: LaneLine[], diedAt: Map<number, number>): Interval[] {
  const out: Interval[] = [];
  const open = new Map<string, LaneLine[]>();
  for (const l of lines) {
    const id = `${l.pid}|${l.runId}|${l.stepId}`;
    if (l.ev === "start") open.set(id, [...(open.get(id) ?? []), l]);
    else {
      const start = open.get(id)?.shift();
      if (!start) throw new Error(`an end without a start: ${JSON.stringify(l)}`);
      out.push({ customer: l.customer, runId: l.runId, stepId: l.stepId, pid: l.pid, start: start.at, end: l.at, killed: false });
    }
  }
  for (const starts of open.values()) {
    for (const s of starts) {
      const died = diedAt.get(s.pid);
      if (died === undefined) throw new Error(`a body that never ended in a process that did not die: ${JSON.stringify(s)}`);
      out.push({ customer: s.customer, runId: s.runId, stepId: s.stepId, pid: s.pid, start: s.at, end: died, killed: true });
    }
  }
  return out;
}

/** Per customer: the most distinct runs with a body running at one instant, and one such instant. */
function peaks(all: Interval[]): Map<string, { peak: number; at: number; runs: string[] }> {
  const out = new Map<string, { peak: number; at: number; runs: string[] }>();
  for (const customer of new Set(all.map((i) => i.customer))) {
    // Ends before starts at the same ms: a body that ended frees nothing until after it ended.
    const points = all
      .filter((i) => i.customer === customer)
      .flatMap((i) => [
        { at: i.start, d: 1, runId: i.runId },
        { at: i.end, d: -1, runId: i.runId },
      ])
      .sort((a, b) => a.at - b.at || a.d - b.d);
    const running = new Map<string, number>();
    let best = { peak: 0, at: 0, runs: [] as string[] };
    for (const p of points) {
      const n = (running.get(p.runId) ?? 0) + p.d;
      if (n === 0) running.delete(p.runId);
      else running.set(p.runId, n);
      if (running.size > best.peak) best = { peak: running.size, at: p.at, runs: [...running.keys()] };
    }
    out.set(customer, best);
  }
  return out;
}

interface SlotRow {
  scope: string;
  idx: number;
  run_id: string;
  expires_at: number;
}

interface Kill {
  label: string;
  pid: number;
  how: "test" | "finished";
  /** When the test sent SIGKILL (test kills), or the worker noted it was about to (finished). */
  sentAt: number;
  /** When the test saw the process exit. */
  diedAt: number;
  /** Bodies running in it at that moment (`<runId>/<stepId>`). */
  bodies: string[];
}

interface Leak extends SlotRow {
  /** The run whose end was written just before its worker died. */
  diedAt: number;
  /** When the test first saw the row in another run's hands, and whose. */
  takenAt?: number;
  takenBy?: string;
}

describe("flow control under SIGKILL", () => {
  it("40+12 runs over 4 customers with limit 2, workers SIGKILLed mid-step: all complete, never more than 2 per customer at once, no slot or queue entry left, leaked slots recovered by expiry", { timeout: 90_000 }, async () => {
    const seed = process.env.FLOW_SEED ? Number(process.env.FLOW_SEED) : Math.floor(Math.random() * 2 ** 31);
    const rand = mulberry32(seed);
    const between = (lo: number, hi: number) => lo + Math.floor(rand() * (hi - lo + 1));
    const t0 = Date.now();
    await withLab(async (lab) => {
      const phase1 = Array.from({ length: CUSTOMERS.length * PHASE1_PER_CUSTOMER }, (_, n) => ({ runId: `lane-${n}`, customer: CUSTOMERS[n % CUSTOMERS.length] ?? "" }));
      const phase2 = Array.from({ length: CUSTOMERS.length * PHASE2_PER_CUSTOMER }, (_, n) => ({ runId: `lane2-${n}`, customer: CUSTOMERS[n % CUSTOMERS.length] ?? "" }));
      const allIds = [...phase1, ...phase2].map((r) => r.runId);
      const scopeOf = (customer: string) => `${laneFlow.name}:${customer}`;

      const db = new BetterSqlite3(lab.journal, { readonly: true, fileMustExist: true });
      db.pragma("busy_timeout = 5000");
      const slotRows = db.prepare<[], SlotRow>("SELECT scope, idx, run_id, expires_at FROM flow_slots ORDER BY scope, idx");
      const queueRows = db.prepare<[], { scope: string; run_id: string; at: number }>("SELECT scope, run_id, at FROM flow_queue ORDER BY scope, at");
      try {
        const diedAt = new Map<number, number>();
        const alive = new Set<WorkerProcess>();
        let spawned = 0;
        const spawn = (kind: "w" | "leak", crashAt?: string, runs = allIds) => {
          const w = lab.spawn({ label: `${kind}${++spawned}`, runs, concurrency: WORKER_CONCURRENCY, leaseTtlMs: LEASE_TTL_MS, watchdogMs: WATCHDOG_MS, ...(crashAt ? { crashAt } : {}) });
          alive.add(w);
          void w.exit.then(() => {
            if (w.child.pid !== undefined) diedAt.set(w.child.pid, Date.now());
            alive.delete(w);
          });
          return w;
        };
        const regular = new Set([spawn("w"), spawn("w")]);
        // Each leak worker dies right after writing the end of the first run it finishes of its
        // two customers: one leaked slot for one of them, never two for the same customer.
        const leakWorkers = [
          spawn("leak", `finished:${phase1.filter((r) => r.customer === "c0" || r.customer === "c1").map((r) => r.runId).join(",")}`, phase1.map((r) => r.runId)),
          spawn("leak", `finished:${phase1.filter((r) => r.customer === "c2" || r.customer === "c3").map((r) => r.runId).join(",")}`, phase1.map((r) => r.runId)),
        ];
        await until(
          "the workers to be ready",
          () => {
            const dead = [...regular, ...leakWorkers].find((w) => w.exited);
            if (dead) throw new Error(`a worker died before it was ready: ${dead.describe()}`);
            return lab.events().filter((e) => e.type === "ready").length === 4;
          },
          30_000,
        );

        const workMs = () => [between(150, 300), between(150, 300)];
        for (const { runId, customer } of phase1) await lab.client.start(laneFlow, { runId, input: { customer, workMs: workMs() } });
        const phase1Started = Date.now();

        const kills: Kill[] = [];
        const leaks: Leak[] = [];
        const seenLeak = new Set<WorkerProcess>();
        const pendingLeakWorkers = () => leakWorkers.filter((w) => !seenLeak.has(w));
        /** A leak worker that died: the slot row of the run it had just finished is still there. */
        const noteLeaks = () => {
          for (const w of pendingLeakWorkers()) {
            if (!w.exited) continue;
            seenLeak.add(w);
            if (w.exited.signal !== "SIGKILL") continue; // phase 1 ended before it finished one of its runs
            const crash = lab.events().find((e) => e.type === "crash" && e.worker === w.label);
            expect(crash?.runId, w.describe()).toBeDefined();
            const pid = w.child.pid ?? -1;
            const died = diedAt.get(pid) ?? Date.now();
            kills.push({ label: w.label, pid, how: "finished", sentAt: crash?.at ?? died, diedAt: died, bodies: [...(openBodies(lanes(lab)).get(pid) ?? [])] });
            const row = slotRows.all().find((r) => r.run_id === crash?.runId);
            expect(row, `the slot of ${crash?.runId}, whose worker died after writing its end, is still held: ${JSON.stringify(slotRows.all())}`).toBeDefined();
            if (row) leaks.push({ ...row, diedAt: died });
          }
        };
        /** Leaked rows that changed hands since (polled; a holder keeps it for a whole invocation). */
        const noteTakeovers = () => {
          const rows = slotRows.all();
          for (const leak of leaks) {
            if (leak.takenAt !== undefined) continue;
            const now = rows.find((r) => r.scope === leak.scope && r.idx === leak.idx);
            if (now?.run_id !== leak.run_id) {
              leak.takenAt = Date.now();
              leak.takenBy = now?.run_id ?? "(freed)";
            }
          }
        };
        const phase1Done = async () => (await Promise.all(phase1.map((r) => lab.client.get(r.runId)))).every((r) => r.status === "completed");

        // The storm: SIGKILL a regular worker while it is inside a step body, start a fresh one.
        let testKills = 0;
        while (testKills < TEST_KILLS && !(await phase1Done())) {
          await delay(between(100, 450));
          noteLeaks();
          noteTakeovers();
          const open = openBodies(lanes(lab));
          const candidates = [...regular].filter((w) => !w.exited && w.child.pid !== undefined && (open.get(w.child.pid)?.size ?? 0) > 0);
          const victim = candidates[Math.floor(rand() * candidates.length)];
          if (!victim) continue;
          const pid = victim.child.pid ?? -1;
          const sentAt = Date.now();
          victim.child.kill("SIGKILL");
          await victim.exit;
          expect(victim.exited?.signal, victim.describe()).toBe("SIGKILL");
          regular.delete(victim);
          kills.push({ label: victim.label, pid, how: "test", sentAt, diedAt: diedAt.get(pid) ?? Date.now(), bodies: [...(open.get(pid) ?? [])] });
          testKills++;
          regular.add(spawn("w"));
        }
        const stormEnded = Date.now();

        // (a), phase 1: every run completes (the leak workers leave once phase 1 is over).
        await until("phase 1 to complete", async () => (noteLeaks(), noteTakeovers(), await phase1Done()), 45_000, 25);
        await Promise.all(leakWorkers.map((w) => w.exit));
        noteLeaks();
        const phase1Ended = Date.now();

        // Phase 2, once every leaked slot has expired: 3 runs per customer at once.
        const lastExpiry = Math.max(0, ...leaks.map((l) => l.expires_at));
        // A leaked slot that was handed to its run keeps the hand-off's expiry when that is later
        // than the run's lease's: a take never moves a slot's expiry earlier.
        await until("the leaked slots to expire", () => Date.now() > lastExpiry, HANDOFF_MS + 10_000);
        const phase2Started = Date.now();
        for (const { runId, customer } of phase2) await lab.client.start(laneFlow, { runId, input: { customer, workMs: [300, 300] } });
        const finished = await until(
          "every run to finish",
          async () => {
            noteTakeovers();
            const runs = await Promise.all(allIds.map((id) => lab.client.get(id)));
            return runs.every((r) => r.status === "completed" || r.status === "failed" || r.status === "cancelled") ? runs : undefined;
          },
          30_000,
          25,
        );
        const workers = [...regular];
        await Promise.all(workers.map((w) => w.exit));
        const ended = Date.now();

        // (a) Every run completed, with its two steps.
        expect(finished.filter((r) => r.status !== "completed").map((r) => [r.runId, r.status, r.error]), "runs that did not complete").toEqual([]);
        for (const run of finished) expect(run.result, run.runId).toMatchObject({ done: [1, 2] });
        for (const w of workers) expect(w.exited?.code, w.describe()).toBe(0);

        // (b) Never more than 2 runs of one customer at once; the limit was reached, in each phase.
        const lines = lanes(lab);
        const all = intervals(lines, diedAt);
        const peak = peaks(all);
        const peak2 = peaks(all.filter((i) => i.start >= phase2Started));
        for (const customer of CUSTOMERS) {
          const p = peak.get(customer);
          expect(p?.peak, `${customer}: most runs at once (at ${p?.at}: ${p?.runs.join(", ")})`).toBeLessThanOrEqual(LANE_LIMIT);
          expect(p?.peak, `${customer}: the limit was reached`).toBe(LANE_LIMIT);
          // Every leaked slot's capacity is back: each customer runs 2 at once again.
          expect(peak2.get(customer)?.peak, `${customer}: runs at once in phase 2`).toBe(LANE_LIMIT);
        }
        const queued = lab.events().filter((e) => e.type === "invocation" && e.result === "queued").length;
        expect(queued, "runs did queue for a slot").toBeGreaterThan(0);

        // The storm was a storm: every test kill hit a worker inside a body, and those runs completed.
        expect(testKills, "SIGKILLs sent mid-step").toBe(TEST_KILLS);
        const killedMidBody = all.filter((i) => i.killed);
        for (const k of kills.filter((k) => k.how === "test")) expect(k.bodies.length, `${k.label} was inside a body when killed`).toBeGreaterThan(0);
        expect(killedMidBody.length, "bodies cut off by a kill").toBeGreaterThanOrEqual(TEST_KILLS);
        for (const i of killedMidBody) {
          // Re-executed later, by another process, and recorded.
          expect(all.some((j) => j.runId === i.runId && j.stepId === i.stepId && j.pid !== i.pid && !j.killed && j.start > i.start), `${i.runId}/${i.stepId} ran again after its process died`).toBe(true);
        }

        // (c) Nothing left: no slot held (not even an expired row), no run queued, for any customer.
        const slotsLeft = slotRows.all();
        const queueLeft = queueRows.all();
        expect(slotsLeft, "flow_slots at the end").toEqual([]);
        expect(queueLeft, "flow_queue at the end").toEqual([]);
        for (const customer of CUSTOMERS) expect(slotsLeft.filter((r) => r.scope === scopeOf(customer))).toEqual([]);

        // (d) The leaked slots: at least one, each taken over by another run, after it expired.
        expect(leaks.length, "slots leaked by a worker that died after writing its run's end").toBeGreaterThanOrEqual(1);
        for (const leak of leaks) {
          expect(leak.takenBy, `leaked ${leak.scope}#${leak.idx} (of ${leak.run_id}) changed hands`).toBeDefined();
          expect(leak.takenBy, `leaked ${leak.scope}#${leak.idx} was not freed by its dead holder`).not.toBe(leak.run_id);
          expect(leak.takenAt ?? 0, `leaked ${leak.scope}#${leak.idx} was taken only after it expired`).toBeGreaterThanOrEqual(leak.expires_at);
        }

        const fmt = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
        console.log(
          [
            `flow control under SIGKILL (FLOW_SEED=${seed}): ${allIds.length} runs (${phase1.length} in the storm + ${phase2.length} after), ${CUSTOMERS.length} customers, limit ${LANE_LIMIT}`,
            `  kills: ${kills.length} (${testKills} SIGKILLs mid-step by the test, ${kills.length - testKills} after writing a run's end), ${spawned} workers in all, ${killedMidBody.length} bodies cut off, ${queued} queued invocations`,
            `  peak per customer: ${CUSTOMERS.map((c) => `${c}=${peak.get(c)?.peak}`).join(" ")}; in phase 2: ${CUSTOMERS.map((c) => `${c}=${peak2.get(c)?.peak}`).join(" ")}`,
            `  leaked slots: ${leaks.map((l) => `${l.scope}#${l.idx} of ${l.run_id} (expired ${l.expires_at - l.diedAt} ms after its worker died) taken by ${l.takenBy} ${(l.takenAt ?? 0) - l.expires_at} ms after expiry`).join("; ")}`,
            `  times: workers ready ${fmt(phase1Started - t0)}, storm ${fmt(stormEnded - phase1Started)}, phase 1 ${fmt(phase1Ended - phase1Started)}, phase 2 ${fmt(ended - phase2Started)}, total ${fmt(ended - t0)}`,
          ].join("\n"),
        );
      } finally {
        db.close();
      }
    });
  });
});
