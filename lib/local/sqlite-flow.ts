/**
 * Flow control on the SQLite file (the store contract's slots, queue and latest start): each
 * operation one statement, or one IMMEDIATE transaction, which takes the write lock before it
 * reads, so processes sharing the file never grant one slot twice.
 */
import type { QueuedRun, SlotHolder } from "../ports.ts";
import type { Database } from "./database.ts";

/** Flow control's operations on the file, as the store's flow-control methods need them. */
export interface FlowStatements {
  take(scope: string, limit: number, holder: SlotHolder, now: number): boolean;
  free(scope: string, runId: string): void;
  enqueue(scope: string, runId: string, at: number): void;
  dequeue(scope: string, run?: QueuedRun): string | undefined;
  peek(scope: string): QueuedRun | undefined;
  markLatest(scope: string, runId: string, at: number): void;
  latest(scope: string): string | undefined;
}

/** Flow control's statements: each operation one statement, or one IMMEDIATE transaction. */
export function flowStatements(db: Database): FlowStatements {
  const slots = db.prepare<[string], { idx: number; run_id: string; expires_at: number }>("SELECT idx, run_id, expires_at FROM flow_slots WHERE scope = ?");
  const put = db.prepare<[string, number, string, number]>("INSERT INTO flow_slots (scope, idx, run_id, expires_at) VALUES (?, ?, ?, ?) ON CONFLICT (scope, idx) DO UPDATE SET run_id = excluded.run_id, expires_at = excluded.expires_at");
  const first = db.prepare<[string], { run_id: string; at: number }>("SELECT run_id, at FROM flow_queue WHERE scope = ? ORDER BY at, run_id LIMIT 1");
  const remove = db.prepare<[string, string]>("DELETE FROM flow_queue WHERE scope = ? AND run_id = ?");
  const take = db.transaction((scope: string, limit: number, holder: SlotHolder, now: number): boolean => {
    const held = slots.all(scope);
    const mine = held.find((s) => s.run_id === holder.runId);
    let idx = mine?.idx;
    for (let i = 0; idx === undefined && i < limit; i++) {
      const s = held.find((h) => h.idx === i);
      if (!s || s.expires_at <= now) idx = i;
    }
    if (idx === undefined) return false;
    put.run(scope, idx, holder.runId, holder.expiresAt);
    return true;
  });
  const dequeue = db.transaction((scope: string): string | undefined => {
    const row = first.get(scope);
    if (row) remove.run(scope, row.run_id);
    return row?.run_id;
  });
  const removeAt = db.prepare<[string, string, number]>("DELETE FROM flow_queue WHERE scope = ? AND run_id = ? AND at = ?");
  const dequeueRun = (scope: string, run: QueuedRun): string | undefined => (removeAt.run(scope, run.runId, run.at).changes > 0 ? run.runId : undefined);
  const free = db.prepare<[string, string]>("DELETE FROM flow_slots WHERE scope = ? AND run_id = ?");
  const insert = db.prepare<[string, string, number]>("INSERT INTO flow_queue (scope, run_id, at) VALUES (?, ?, ?) ON CONFLICT (scope, run_id) DO NOTHING");
  const markLatest = db.prepare<[string, string, number]>(`
    INSERT INTO flow_latest (scope, run_id, at) VALUES (?, ?, ?)
    ON CONFLICT (scope) DO UPDATE SET run_id = excluded.run_id, at = excluded.at
    WHERE excluded.at > flow_latest.at OR (excluded.at = flow_latest.at AND excluded.run_id > flow_latest.run_id)`);
  const latest = db.prepare<[string], { run_id: string }>("SELECT run_id FROM flow_latest WHERE scope = ?");
  return {
    take: (scope, limit, holder, now) => take.immediate(scope, limit, holder, now),
    free: (scope, runId) => void free.run(scope, runId),
    enqueue: (scope, runId, at) => void insert.run(scope, runId, Math.max(0, Math.floor(at))),
    dequeue: (scope, run) => (run === undefined ? dequeue.immediate(scope) : dequeueRun(scope, run)),
    peek: (scope) => {
      const row = first.get(scope);
      return row && { runId: row.run_id, at: row.at };
    },
    markLatest: (scope, runId, at) => void markLatest.run(scope, runId, at),
    latest: (scope) => latest.get(scope)?.run_id,
  };
}
