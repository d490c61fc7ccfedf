/**
 * Flow control on the SQLite file: the primitives the shared rules (lib/core/journal-base.ts)
 * take a slot, free it and run the queue with — each one conditional statement, so processes
 * sharing the file never hold one slot twice.
 */
import type { QueuedRun, SlotEntry, SlotHolder } from "../ports.ts";
import type { Database } from "./database.ts";
import { waitingInQueue } from "../core/flow-control.ts";

/** Flow control's statements, as the store's flow primitives need them. */
export interface FlowStatements {
  slots(scope: string): SlotEntry[];
  /** Slot `index` for `holder` if free, expired by `now`, or the holder's already. */
  put(scope: string, index: number, holder: SlotHolder, now: number): boolean;
  remove(scope: string, index: number, runId: string): void;
  enqueue(scope: string, runId: string, at: number): void;
  dequeue(scope: string, run: QueuedRun): boolean;
  peek(scope: string): QueuedRun | undefined;
  markLatest(scope: string, runId: string, at: number): void;
  latest(scope: string): string | undefined;
}

export function flowStatements(db: Database): FlowStatements {
  const slots = db.prepare<[string], { idx: number; run_id: string; expires_at: number }>("SELECT idx, run_id, expires_at FROM flow_slots WHERE scope = ? ORDER BY idx");
  const put = db.prepare<[{ scope: string; idx: number; runId: string; expiresAt: number; now: number }]>(`
    INSERT INTO flow_slots (scope, idx, run_id, expires_at) VALUES (@scope, @idx, @runId, @expiresAt)
    ON CONFLICT (scope, idx) DO UPDATE SET run_id = excluded.run_id,
      expires_at = CASE WHEN flow_slots.run_id = excluded.run_id THEN max(flow_slots.expires_at, excluded.expires_at) ELSE excluded.expires_at END
    WHERE flow_slots.expires_at <= @now OR flow_slots.run_id = excluded.run_id`);
  const remove = db.prepare<[string, number, string]>("DELETE FROM flow_slots WHERE scope = ? AND idx = ? AND run_id = ?");
  const first = db.prepare<[string], { run_id: string; at: number }>("SELECT run_id, at FROM flow_queue WHERE scope = ? ORDER BY at, run_id LIMIT 1");
  const removeAt = db.prepare<[string, string, number]>("DELETE FROM flow_queue WHERE scope = ? AND run_id = ? AND at = ?");
  // Only a run that waits for this queue is queued: an invocation that lost its lease long ago
  // may come late, once the run was taken again (a canceller, the next invocation) or ended.
  const insert = db.prepare<[{ scope: string; runId: string; at: number; waitingFor: string }]>(`
    INSERT INTO flow_queue (scope, run_id, at) SELECT @scope, @runId, @at
    WHERE EXISTS (SELECT 1 FROM runs WHERE run_id = @runId AND status IN ('queued', 'suspended') AND waiting_for = @waitingFor)
    ON CONFLICT (scope, run_id) DO NOTHING`);
  const markLatest = db.prepare<[string, string, number]>(`
    INSERT INTO flow_latest (scope, run_id, at) VALUES (?, ?, ?)
    ON CONFLICT (scope) DO UPDATE SET run_id = excluded.run_id, at = excluded.at
    WHERE excluded.at > flow_latest.at OR (excluded.at = flow_latest.at AND excluded.run_id > flow_latest.run_id)`);
  const latest = db.prepare<[string], { run_id: string }>("SELECT run_id FROM flow_latest WHERE scope = ?");
  return {
    slots: (scope) => slots.all(scope).map((r) => ({ index: r.idx, runId: r.run_id, expiresAt: r.expires_at })),
    put: (scope, index, holder, now) => put.run({ scope, idx: index, runId: holder.runId, expiresAt: holder.expiresAt, now }).changes > 0,
    remove: (scope, index, runId) => void remove.run(scope, index, runId),
    enqueue: (scope, runId, at) => void insert.run({ scope, runId, at: Math.max(0, Math.floor(at)), waitingFor: waitingInQueue(scope) }),
    dequeue: (scope, run) => removeAt.run(scope, run.runId, run.at).changes > 0,
    peek: (scope) => {
      const row = first.get(scope);
      return row && { runId: row.run_id, at: row.at };
    },
    markLatest: (scope, runId, at) => void markLatest.run(scope, runId, at),
    latest: (scope) => latest.get(scope)?.run_id,
  };
}
