/**
 * The local wake queue: the `wakes` table of the journal file, polled by the local runtime.
 * It lives in the same file as the journal, so a `kill -9` loses no wake: a claimed wake that
 * was never acked becomes visible again once its claim times out, as an SQS message would.
 */
import type { Statement } from "better-sqlite3";
import type { ClaimedWake, PollableWakeQueue, Wake, WakeReason } from "../ports.ts";
import type { Database } from "./database.ts";
import { WriteQueue } from "./sqlite-batch.ts";

interface WakeRow {
  run_id: string;
  key: string;
  at: number;
  reason: string;
  generation: number;
}

export interface WakeTableOptions {
  /** Called after each `schedule`, e.g. to cut a poll loop's idle pause short. */
  onSchedule?: (wake: Wake) => void;
}

/**
 * A random generation for a scheduled wake: 53 bits, so a wake cancelled and scheduled again never
 * takes the generation an older claim of it holds (that claim's ack would delete the new wake),
 * without a shared counter row that every schedule would have to update (a second statement and
 * a page written per commit). Two generations of one key colliding has odds of 2^-53.
 */
function freshGeneration(): number {
  return Math.floor(Math.random() * 2 ** 53);
}

/**
 * A {@link PollableWakeQueue} over the `wakes` table (open the file with `openLocalDatabase`).
 * One wake per run and key; rescheduling a key replaces its time and gives it a new generation.
 * Every operation is one statement (a schedule an upsert, a claim an `UPDATE … RETURNING`),
 * so each is atomic on its own and safe to retry after a lost answer.
 *
 * @example
 * ```ts
 * const wakes = new SqliteWakeTable(openLocalDatabase(".waymark/journal.db"));
 * await wakes.schedule({ runId: "order-1", at: Date.now() + 60_000, reason: "sleep", key: "sleep:cool-off" });
 * for (const wake of await wakes.claimDue(Date.now(), 10, 30_000)) {
 *   await engine.invoke(wake.runId);
 *   await wakes.ack(wake);
 * }
 * ```
 */
export class SqliteWakeTable implements PollableWakeQueue {
  private readonly upsert: Statement<[Wake & { generation: number }]>;
  private readonly remove: Statement<[string, string]>;
  private readonly claim: Statement<{ now: number; limit: number; hidden: number }, WakeRow>;
  private readonly removeIfGeneration: Statement<[string, string, number]>;
  private readonly minVisible: Statement<[], number | null>;
  /** Writes share the connection's group commit with the journal's (sqlite-batch.ts). */
  private readonly writes: WriteQueue;

  constructor(
    db: Database,
    private readonly options: WakeTableOptions = {},
  ) {
    this.writes = WriteQueue.of(db);
    this.upsert = db.prepare<[Wake & { generation: number }]>(`
      INSERT INTO wakes (run_id, key, at, reason, visible_at, generation) VALUES (@runId, @key, @at, @reason, @at, @generation)
      ON CONFLICT (run_id, key) DO UPDATE SET
        at = excluded.at, reason = excluded.reason, visible_at = excluded.visible_at, generation = excluded.generation`);
    this.remove = db.prepare<[string, string]>("DELETE FROM wakes WHERE run_id = ? AND key = ?");
    // Hides the earliest visible wakes in the statement that picks them, so two pollers never
    // claim the same wake (one statement holds the write lock throughout).
    this.claim = db.prepare<{ now: number; limit: number; hidden: number }, WakeRow>(`
      UPDATE wakes SET visible_at = @hidden
      WHERE rowid IN (SELECT rowid FROM wakes WHERE visible_at <= @now ORDER BY visible_at, run_id, key LIMIT @limit)
      RETURNING run_id, key, at, reason, generation`);
    this.removeIfGeneration = db.prepare<[string, string, number]>("DELETE FROM wakes WHERE run_id = ? AND key = ? AND generation = ?");
    this.minVisible = db.prepare<[], number | null>("SELECT min(visible_at) FROM wakes").pluck();
  }

  async schedule(wake: Wake): Promise<void> {
    const row = { runId: wake.runId, key: wake.key, at: wake.at, reason: wake.reason, generation: freshGeneration() };
    await this.writes.write(wake.runId, () => this.upsert.run(row));
    this.options.onSchedule?.(wake);
  }

  async cancel(runId: string, key: string): Promise<void> {
    await this.writes.write(runId, () => this.remove.run(runId, key));
  }

  async claimDue(now: number, limit: number, visibilityMs: number): Promise<ClaimedWake[]> {
    const rows = await this.writes.write(undefined, () => this.claim.all({ now, limit: Math.max(0, Math.floor(limit)), hidden: now + visibilityMs }));
    // RETURNING keeps no order: the picked wakes by their time, then run and key.
    rows.sort((a, b) => a.at - b.at || (a.run_id < b.run_id ? -1 : a.run_id > b.run_id ? 1 : a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    return rows.map((row) => ({ runId: row.run_id, key: row.key, at: row.at, reason: row.reason as WakeReason, generation: row.generation }));
  }

  async ack(wake: ClaimedWake): Promise<void> {
    await this.writes.write(wake.runId, () => this.removeIfGeneration.run(wake.runId, wake.key, wake.generation));
  }

  async nextDueAt(): Promise<number | undefined> {
    return this.minVisible.get() ?? undefined;
  }
}
