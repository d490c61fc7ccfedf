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
 * A {@link PollableWakeQueue} over the `wakes` table (open the file with `openLocalDatabase`).
 * One wake per run and key; rescheduling a key replaces its time and bumps its generation.
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
  private readonly nextGeneration: Statement<[], number>;
  private readonly upsert: Statement<[Wake & { generation: number }]>;
  private readonly remove: Statement<[string, string]>;
  private readonly selectVisible: Statement<[number, number], WakeRow>;
  private readonly hide: Statement<[number, string, string]>;
  private readonly removeIfGeneration: Statement<[string, string, number]>;
  private readonly minVisible: Statement<[], number | null>;
  private readonly scheduleTx: (wake: Wake) => void;
  private readonly claimTx: (now: number, limit: number, visibilityMs: number) => ClaimedWake[];
  /** Writes share the connection's group commit with the journal's (sqlite-batch.ts). */
  private readonly writes: WriteQueue;

  constructor(
    db: Database,
    private readonly options: WakeTableOptions = {},
  ) {
    this.writes = WriteQueue.of(db);
    this.nextGeneration = db.prepare<[], number>("UPDATE wake_generation SET value = value + 1 WHERE id = 1 RETURNING value").pluck();
    this.upsert = db.prepare<[Wake & { generation: number }]>(`
      INSERT INTO wakes (run_id, key, at, reason, visible_at, generation) VALUES (@runId, @key, @at, @reason, @at, @generation)
      ON CONFLICT (run_id, key) DO UPDATE SET
        at = excluded.at, reason = excluded.reason, visible_at = excluded.visible_at, generation = excluded.generation`);
    this.remove = db.prepare<[string, string]>("DELETE FROM wakes WHERE run_id = ? AND key = ?");
    this.selectVisible = db.prepare<[number, number], WakeRow>(`
      SELECT run_id, key, at, reason, generation FROM wakes WHERE visible_at <= ?
      ORDER BY visible_at, run_id, key LIMIT ?`);
    this.hide = db.prepare<[number, string, string]>("UPDATE wakes SET visible_at = ? WHERE run_id = ? AND key = ?");
    this.removeIfGeneration = db.prepare<[string, string, number]>("DELETE FROM wakes WHERE run_id = ? AND key = ? AND generation = ?");
    this.minVisible = db.prepare<[], number | null>("SELECT min(visible_at) FROM wakes").pluck();

    this.scheduleTx = db.transaction((wake: Wake) => {
      const generation = this.nextGeneration.get();
      if (generation === undefined) throw new Error("the wake_generation row is missing; the journal file is damaged");
      this.upsert.run({ runId: wake.runId, key: wake.key, at: wake.at, reason: wake.reason, generation });
    }).immediate;
    // Select and hide under one write lock, so two pollers never claim the same wake.
    this.claimTx = db.transaction((now: number, limit: number, visibilityMs: number): ClaimedWake[] => {
      const rows = this.selectVisible.all(now, Math.max(0, Math.floor(limit)));
      for (const row of rows) this.hide.run(now + visibilityMs, row.run_id, row.key);
      return rows.map((row) => ({
        runId: row.run_id,
        key: row.key,
        at: row.at,
        reason: row.reason as WakeReason,
        generation: row.generation,
      }));
    }).immediate;
  }

  async schedule(wake: Wake): Promise<void> {
    await this.writes.write(wake.runId, () => this.scheduleTx(wake));
    this.options.onSchedule?.(wake);
  }

  async cancel(runId: string, key: string): Promise<void> {
    await this.writes.write(runId, () => this.remove.run(runId, key));
  }

  async claimDue(now: number, limit: number, visibilityMs: number): Promise<ClaimedWake[]> {
    return this.writes.write(undefined, () => this.claimTx(now, limit, visibilityMs));
  }

  async ack(wake: ClaimedWake): Promise<void> {
    await this.writes.write(wake.runId, () => this.removeIfGeneration.run(wake.runId, wake.key, wake.generation));
  }

  async nextDueAt(): Promise<number | undefined> {
    return this.minVisible.get() ?? undefined;
  }
}
