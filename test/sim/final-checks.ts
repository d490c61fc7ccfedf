/**
 * The invariants that need the end of the story, read from the store once every run has ended:
 *
 * - every run (children too) ended, none `failed` (the workloads catch what they expect);
 * - a saga that ended `cancelled` ran the compensation of every forward step it completed;
 * - every acknowledged signal was consumed at most once over all incarnations, and none was lost
 *   (consumed, or still buffered in the run's last journal); a `delivered` one was consumed;
 * - no flow-control slot or queue entry is held by a finished run;
 * - the last journal of every run replays against the code without a divergence.
 */
import type { Database } from "../../lib/local/database.ts";
import type { JournalStore, RunMeta, StoredRecord } from "../../lib/ports.ts";
import { TERMINAL_STATUSES } from "../../lib/ports.ts";
import { MemoryJournalStore } from "../../lib/testing/memory-store.ts";
import { replayHistories } from "../../lib/testing/replay-histories.ts";
import type { Ledger } from "./ledger.ts";
import { replayHooks, simWorkflows } from "./workloads.ts";

export interface PlannedRun {
  runId: string;
  workflow: string;
  input: unknown;
  /** When (ms after the start) the client sends this run its planned signals. */
  signalsAt: number[];
  /** When (ms after the start) the client cancels it, if it does. */
  cancelAt?: number;
}

export interface FinalContext {
  store: JournalStore;
  ledger: Ledger;
  plans: PlannedRun[];
  started: ReadonlySet<string>;
  storeKind: "memory" | "sqlite";
  db: Database | undefined;
  /** The simulated time now: a slot whose expiry has passed is no longer held. */
  now: number;
  /** Writes to the story's trace (the journals, when a check fails). */
  log: (line: string) => void;
}

type Body = { type?: string; kind?: string; stepId?: string; status?: string; signalId?: string; via?: string; seq?: number };

export async function finalChecks(c: FinalContext): Promise<void> {
  const { store, ledger } = c;
  const runs = await allRuns(store);
  const journals = new Map<string, StoredRecord[][]>();
  for (const run of runs) {
    const list: StoredRecord[][] = [];
    for (let k = 1; k <= (run.incarnation ?? 1); k++) list.push((await store.loadJournal(run.runId, { incarnation: k }))?.records ?? []);
    journals.set(run.runId, list);
    if (!TERMINAL_STATUSES.has(run.status)) ledger.fail("not-finished", `run ${run.runId} is still ${run.status} (waiting for ${run.waitingFor ?? "?"})`);
    if (run.status === "failed") ledger.fail("run-failed", `run ${run.runId} failed: ${run.error?.name}: ${run.error?.message}`);
  }
  for (const plan of c.plans) {
    if (c.started.has(plan.runId) && !runs.some((r) => r.runId === plan.runId)) ledger.fail("run-lost", `run ${plan.runId} was started and is not in the store`);
  }

  // Sagas that ended cancelled undid every forward step the workflow saw complete. A result an
  // invocation that had lost its lease wrote after the holder went on without it is placed after
  // every recorded delivery (place#): placed past the last compensation, it came after the saga
  // had compensated and thrown (else the saga, popping the newest first, would undo it next), so
  // the workflow never saw it complete (the run's history shows it late).
  for (const run of runs.filter((r) => r.workflow === "sim-saga" && r.status === "cancelled")) {
    const records = journals.get(run.runId)?.[0] ?? [];
    const bodies = records.map((r) => r.body as Body);
    const placed = new Map(bodies.filter((b) => b.type === "place").map((b) => [b.stepId ?? "", b.seq ?? 0]));
    const runSteps = bodies.filter((b) => b.type === "step" && b.kind === "run");
    const lastUndo = Math.max(0, ...runSteps.filter((b) => b.stepId?.startsWith("un")).map((b) => placed.get(b.stepId ?? "") ?? b.seq ?? 0));
    const ok = new Set(runSteps.filter((b) => b.status === "ok").map((b) => b.stepId ?? ""));
    for (const step of ok) {
      const undo = compensationOf(step);
      if ((placed.get(step) ?? 0) > lastUndo) continue;
      if (undo !== undefined && !ok.has(undo)) ledger.fail("compensation-missing", `run ${run.runId} ended cancelled, but ${step} completed and ${undo} never did`);
    }
  }

  // Signals: consumed at most once over every incarnation, never lost.
  for (const ack of ledger.signals) {
    const list = journals.get(ack.runId) ?? [];
    let consumed = 0;
    for (const records of list) for (const r of records) if ((r.body as Body).type === "resolution" && (r.body as Body).signalId === ack.signalId) consumed++;
    if (consumed > 1) ledger.fail("signal-consumed-twice", `signal ${ack.signalId} of ${ack.runId} was consumed ${consumed} times`);
    if (ack.status === "delivered" && consumed === 0) ledger.fail("signal-not-consumed", `signal ${ack.signalId} answered delivered, and no wait took it`);
    const last = list.at(-1) ?? [];
    const kept = last.some((r) => r.key === `signal#${ack.signalId}` && r.lateFor === undefined);
    if (consumed === 0 && !kept) ledger.fail("signal-lost", `signal ${ack.signalId} of ${ack.runId} (answered ${ack.status}) is neither consumed nor buffered in the last journal`);
  }

  const leaks = await flowLeaks(c, runs);
  if (leaks.length > 0) ledger.fail("flow-leak", leaks.join("; "));

  if (ledger.violation) {
    for (const run of runs) {
      c.log(`journal of ${run.runId} (${run.status}${run.error ? ` ${run.error.name}` : ""}):`);
      for (const [k, records] of (journals.get(run.runId) ?? []).entries()) for (const r of records) c.log(`  [${k + 1}] ${r.key} ${brief(r.body)}`);
    }
    return;
  }

  // Every terminal run's last journal replays.
  const workflows = simWorkflows(replayHooks);
  for (const run of runs.filter((r) => TERMINAL_STATUSES.has(r.status))) {
    const records = journals.get(run.runId)?.at(-1) ?? [];
    const [report] = await replayHistories({ workflows, histories: [{ run, records }] });
    if (report && !report.ok) ledger.fail("replay-diverges", `run ${run.runId}: ${report.error?.name}: ${report.error?.message}`);
  }
}

/** The compensation a saga registers after a forward step. */
function compensationOf(stepId: string): string | undefined {
  const m = /^(book\d+|side-[ab]|more-[ab])$/.exec(stepId);
  return m ? `un${stepId}` : undefined;
}

async function allRuns(store: JournalStore): Promise<RunMeta[]> {
  const runs: RunMeta[] = [];
  let cursor: string | undefined;
  do {
    const page = await store.listRuns({ limit: 100, ...(cursor ? { cursor } : {}) });
    runs.push(...page.runs);
    cursor = page.cursor;
  } while (cursor);
  return runs;
}

/** Slots and queue entries of finished runs (read from the store's own tables). */
async function flowLeaks(c: FinalContext, runs: RunMeta[]): Promise<string[]> {
  const finished = new Set(runs.filter((r) => TERMINAL_STATUSES.has(r.status)).map((r) => r.runId));
  const held: Array<{ scope: string; runId: string; kind: string }> = [];
  // The slots through the store's own listing; the queues from its tables.
  for (const scope of ["sim-limited:k0", "sim-limited:k1"]) {
    for (const slot of await c.store.slots(scope)) if (slot.expiresAt > c.now) held.push({ scope, runId: slot.runId, kind: "slot" });
  }
  if (c.store instanceof MemoryJournalStore) {
    const inner = c.store as unknown as { queues: Map<string, Map<string, number>> };
    for (const [scope, queue] of inner.queues) for (const runId of queue.keys()) held.push({ scope, runId, kind: "queue entry" });
  } else if (c.db) {
    for (const row of c.db.prepare("SELECT scope, run_id FROM flow_queue").all() as Array<{ scope: string; run_id: string }>) held.push({ scope: row.scope, runId: row.run_id, kind: "queue entry" });
  }
  return held.filter((h) => finished.has(h.runId)).map((h) => `${h.kind} of ${h.scope} held by finished run ${h.runId}`);
}

function brief(body: unknown): string {
  const b = body as { status?: string; via?: string; signalId?: string; error?: { name?: string }; attempts?: number; inv?: number };
  return [b.status, b.via, b.signalId, b.error?.name, b.attempts === undefined ? undefined : `attempts ${b.attempts}`, b.inv === undefined ? undefined : `inv ${b.inv}`].filter(Boolean).join(" ");
}
