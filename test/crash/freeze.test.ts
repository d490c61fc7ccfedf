/**
 * A worker process frozen (SIGSTOP) inside a fan-out for longer than its lease, while a second
 * worker on the same journal file takes the run over, then thawed (SIGCONT) — a GC pause, a
 * suspended laptop, a zombie Lambda. `crash-fan`: `Promise.all` of fan-1..fan-3 with different
 * durations, then after-1, a durable sleep, after-2, after-3.
 *
 * Worker A stops itself at an exact point (`freezeAt`: a fan-out body has returned, its record is
 * not written), so that on SIGCONT it carries on from there: it writes that record at once, before
 * any timer (its lease heartbeat included) runs. Each variant thaws it at another moment of worker
 * B's takeover. In every variant:
 *   - the run completes within a deadline (no hang, no run left stranded);
 *   - no body of a step after the fan-out executes twice;
 *   - every body started while the journal showed its own worker holding the run's lease: the
 *     thawed worker started no new body for a run it no longer owned;
 *   - the thawed invocation ended `lost-lease`.
 */
import { type ExpectStatic, describe, it } from "vitest";
import type { JournalRecord } from "waymark";
import { processState, withLab } from "./harness.ts";
import { until } from "../support/until.ts";
import { fanFlow } from "./workflows.ts";

const LEASE_TTL_MS = 1_000;
/** The watchdog wakes a run whose lease lapsed 1 s ago; this often, so a stranded run is found soon. */
const WATCHDOG_MS = 200;
const AFTER = ["after-1", "after-2", "after-3"] as const;
/** A is the only worker when the run starts, so its invocation is the run's first; B's takeover is the second. */
const INV_A = 1;
const INV_B = 2;

interface Variant {
  name: string;
  freezeAt: string;
  fanMs: Record<string, number[]>;
  /** When A gets SIGCONT: as soon as B holds the lease, once B has recorded after-1, once the run finished. */
  thaw: "takeover" | "past-fan-out" | "finished";
  /** What the journal must show for the variant to have happened as designed. */
  check: (records: Map<string, RunRecord>, expect: ExpectStatic) => void;
}

type RunRecord = Extract<JournalRecord, { type: "step"; kind: "run" }>;

const variants: Variant[] = [
  {
    name: "thawed as soon as B holds the lease (B still inside the fan-out): A wins fan-3's record, then starts nothing",
    freezeAt: "inside:fan-3",
    // A: fan-1 and fan-2 are recorded before it freezes in fan-3. B runs fan-3 for 1.5 s, so A's record comes first.
    fanMs: { "*": [50, 100, 200], B: [50, 100, 1_500] },
    thaw: "takeover",
    check: (r, expect) => {
      expect(r.get("fan-3")?.inv, "A recorded fan-3 after thawing (it won the write, its lease had expired by its own clock)").toBe(INV_A);
    },
  },
  {
    name: "thawed once B has recorded after-1: A loses fan-3's record to B and ends",
    freezeAt: "inside:fan-3",
    fanMs: { "*": [50, 100, 200] },
    thaw: "past-fan-out",
    check: (r, expect) => expect(r.get("fan-3")?.inv, "B recorded fan-3").toBe(INV_B),
  },
  {
    name: "thawed after B finished the run: A loses fan-3's record to B and ends",
    freezeAt: "inside:fan-3",
    fanMs: { "*": [50, 100, 200] },
    thaw: "finished",
    check: (r, expect) => expect(r.get("fan-3")?.inv, "B recorded fan-3").toBe(INV_B),
  },
  {
    name: "thawed as soon as B holds the lease, the two finishing the fan-out in different orders: two records share a seq, and later replays still deliver",
    freezeAt: "inside:fan-1",
    // A records fan-3 (seq 1), freezes in fan-1; its fan-2 is still running (8 s). B runs fan-2 in
    // 0.8 s and fan-1 in 2 s: A records fan-1 with seq 2 on thawing, B records fan-2 with seq 2.
    fanMs: { "*": [150, 8_000, 50], B: [2_000, 800, 50] },
    thaw: "takeover",
    check: (r, expect) => {
      expect(r.get("fan-3")).toMatchObject({ seq: 1, inv: INV_A });
      expect(r.get("fan-1"), "A recorded fan-1 after thawing").toMatchObject({ seq: 2, inv: INV_A });
      expect(r.get("fan-2"), "B recorded fan-2 with the same seq").toMatchObject({ seq: 2, inv: INV_B });
    },
  },
];


describe("a worker frozen (SIGSTOP) past its lease inside a fan-out, thawed after another worker took the run over", () => {
  it.for(variants.map((v, i) => ({ ...v, i })))("$name", { timeout: 60_000 }, async (v, { expect }) => {
    await withLab(async (lab) => {
      const runId = `fan-${v.i + 1}`;
      const common = { runs: [runId], leaseTtlMs: LEASE_TTL_MS, watchdogMs: WATCHDOG_MS, noteLease: true };
      const a = lab.spawn({ label: "A", freezeAt: v.freezeAt, ...common });
      const ownerA = await until("worker A to be ready", () => lab.workerOwner("A"));
      await lab.client.start(fanFlow, { runId, input: { fanMs: v.fanMs, afterMs: 50, settleMs: 100 } });

      const froze = await until("A to stop itself inside the fan-out", () => lab.events().find((e) => e.worker === "A" && e.type === "freeze" && e.runId === runId));
      const pidA = a.child.pid ?? -1;
      await until(`A (pid ${pidA}) to be stopped`, () => processState(pidA) === "T");
      const b = lab.spawn({ label: "B", ...common });
      const ownerB = await until("worker B to be ready", () => lab.workerOwner("B"));

      // A renews nothing while stopped. Once its lease has expired, a wake (a duplicate, or the
      // watchdog's) lets B take the run over — unless B, starting, already found the run overdue.
      const expired = await until("A's lease to expire", async () => {
        const run = await lab.client.get(runId);
        if (!run.lease?.owner.startsWith(ownerA)) return "taken";
        return run.lease.expiresAt < Date.now() && "expired";
      });
      if (expired === "expired") await lab.wakes.schedule({ runId, at: Date.now(), reason: "watchdog", key: "takeover" });
      await until("B to take the run over", async () => (await lab.client.get(runId)).lease?.owner.startsWith(ownerB));
      if (v.thaw === "past-fan-out") {
        await until("B to record after-1", () => lab.events().some((e) => e.worker === "B" && e.step?.runId === runId && e.step.stepId === "after-1" && e.step.outcome === "completed"));
      } else if (v.thaw === "finished") {
        await lab.finished(runId);
      }
      expect(processState(pidA), "A was still stopped when thawed").toBe("T");
      a.child.kill("SIGCONT");

      const run = await lab.finished(runId);
      await Promise.all([a.exit, b.exit]);
      expect(a.exited?.code, a.describe()).toBe(0);
      expect(b.exited?.code, b.describe()).toBe(0);
      expect(run.status, JSON.stringify(run)).toBe("completed");
      expect(run.result).toEqual({ fan: [1, 2, 3], after: [1, 2, 3] });

      const executions = lab.log.read().filter((e) => e.runId === runId);
      const count = (stepId: string) => executions.filter((e) => e.stepId === stepId).length;
      expect(Object.fromEntries(AFTER.map((s) => [s, count(s)])), "executions of each step after the fan-out").toEqual({ "after-1": 1, "after-2": 1, "after-3": 1 });

      const thawed = lab.events().find((e) => e.worker === "A" && e.type === "thaw" && e.runId === runId);
      expect(thawed, "A noted that it was thawed").toBeDefined();
      const owners: Record<string, string> = { A: ownerA, B: ownerB };
      const unowned = executions.filter((e) => !(e.leaseOwner ?? "").startsWith(owners[e.worker] ?? "?"));
      expect(
        unowned.filter((e) => e.worker === "A" && e.at >= (thawed?.at ?? 0)),
        "bodies A started after thawing, for a run whose lease it did not hold",
      ).toEqual([]);
      expect(unowned, "bodies started while the journal showed another owner's lease (or none)").toEqual([]);

      // A's first invocation is the one it was frozen in (a run in flight in a process gets no second).
      const invocationsA = lab.events().filter((e) => e.worker === "A" && e.type === "invocation" && e.runId === runId);
      expect(invocationsA[0]?.result, "how A's frozen invocation ended").toBe("lost-lease");
      expect(invocationsA[0]?.at ?? 0).toBeGreaterThanOrEqual(thawed?.at ?? Infinity);

      const records = new Map(
        (await lab.records(runId)).flatMap((r): [string, RunRecord][] => (r.type === "step" && r.kind === "run" ? [[r.stepId, r]] : [])),
      );
      expect(froze.at).toBeLessThan(thawed?.at ?? 0);
      v.check(records, expect);

      const by = (w: string) => executions.filter((e) => e.worker === w).map((e) => e.stepId);
      const outcomes = (w: string) => lab.events().filter((e) => e.worker === w && e.type === "invocation").map((e) => e.result);
      console.log(
        `freeze (${v.thaw}, ${v.freezeAt}): A ran [${by("A").join(", ")}], invocations ${outcomes("A").join(", ")}; ` +
          `B ran [${by("B").join(", ")}], invocations ${outcomes("B").join(", ")}; ` +
          `seqs ${[...records.values()].map((r) => `${r.stepId}:${r.seq}@${r.inv}`).join(" ")}; frozen ${(thawed?.at ?? 0) - froze.at} ms`,
      );
    });
  });
});
