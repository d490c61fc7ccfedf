/**
 * The statements on the `runs` table that the SQLite store sends (sqlite-store.ts), prepared once
 * per connection. Each rule of a run's row is one conditional statement: a grant, a renewal, a
 * release, a continue and a finish each name the state they expect in their `WHERE`, and say by
 * their change count (or the row they return) whether they applied.
 */
import type { Statement } from "better-sqlite3";
import type { Database } from "./database.ts";
import { ENDED_STATUSES, type RunRow } from "./sqlite-rows.ts";

export type Params = Record<string, string | number | null>;

const NOT_FINISHED = `status NOT IN ${ENDED_STATUSES}`;

/** The run row's statements. */
export interface RunStatements {
  insertRun: Statement<[Params]>;
  selectRun: Statement<[string], RunRow>;
  grantLease: Statement<[Params], RunRow>;
  extendLease: Statement<[Params]>;
  suspend: Statement<[Params], { wake_at: number | null }>;
  continueStmt: Statement<[Params]>;
  finishStmt: Statement<[Params]>;
  due: Statement<[Params], { status: string }>;
  selectDue: Statement<[number, number], RunRow>;
  /** Indexed by `(status given ? 2 : 0) + (cursor given ? 1 : 0)`. */
  selectPage: ReadonlyArray<Statement<[Params], RunRow>>;
}

export function runStatements(db: Database): RunStatements {
  const insertRun = db.prepare<[Params]>(`
    INSERT INTO runs (run_id, workflow, input, status, created_at, updated_at, wake_at, lease_token, invocations, child)
    VALUES (@runId, @workflow, @input, 'pending', @createdAt, @createdAt, @createdAt, 0, 0, @child)
    ON CONFLICT (run_id) DO NOTHING`);
  const selectRun = db.prepare<[string], RunRow>("SELECT * FROM runs WHERE run_id = ?");
  const grantLease = db.prepare<[Params], RunRow>(`
    UPDATE runs SET lease_token = lease_token + 1, lease_owner = @owner, lease_expires_at = @expiresAt,
      status = 'running', wake_at = @expiresAt, due_on_release = NULL, invocations = invocations + 1, updated_at = @now
    WHERE run_id = @runId AND ${NOT_FINISHED}
      AND (lease_owner IS NULL OR lease_expires_at <= @now OR lease_token = @ifToken)
      AND (@dueBy IS NULL OR status <> 'suspended' OR wake_at <= @dueBy)
    RETURNING *`);
  // Never backwards: a renewal delayed in transit must not undo a later one.
  const extendLease = db.prepare<[Params]>(`
    UPDATE runs SET lease_expires_at = MAX(lease_expires_at, @expiresAt), wake_at = MAX(lease_expires_at, @expiresAt)
    WHERE run_id = @runId AND lease_owner IS NOT NULL AND lease_token = @token AND ${NOT_FINISHED}`);
  // The run's wake time: the release's, or its dueOnRelease if earlier (a signal came meanwhile),
  // returned by the same write (the release's answer says it).
  const suspend = db.prepare<[Params], { wake_at: number | null }>(`
    UPDATE runs SET lease_owner = NULL, lease_expires_at = NULL, status = @status,
      wake_at = CASE WHEN due_on_release IS NOT NULL AND (@wakeAt IS NULL OR due_on_release < @wakeAt) THEN due_on_release ELSE @wakeAt END,
      due_on_release = NULL, waiting_for = @waitingFor, updated_at = @now
    WHERE run_id = @runId AND lease_owner IS NOT NULL AND lease_token = @token AND ${NOT_FINISHED}
    RETURNING wake_at`);
  const continueStmt = db.prepare<[Params]>(`
    UPDATE runs SET input = @input, incarnation = @incarnation, status = 'pending', wake_at = @now, due_on_release = NULL, waiting_for = NULL,
      lease_owner = NULL, lease_expires_at = NULL, updated_at = @now
    WHERE run_id = @runId AND lease_owner IS NOT NULL AND lease_token = @token AND ${NOT_FINISHED}`);
  // What the finish expects: its lease (a token), or a run never invoked and not leased.
  const finishStmt = db.prepare<[Params]>(`
    UPDATE runs SET status = @status, result = @result, error = @error, finished_at = @now, updated_at = @now,
      lease_owner = NULL, lease_expires_at = NULL, wake_at = NULL, due_on_release = NULL, waiting_for = NULL
    WHERE run_id = @runId AND ${NOT_FINISHED}
      AND ((@token IS NOT NULL AND lease_owner IS NOT NULL AND lease_token = @token)
        OR (@token IS NULL AND lease_owner IS NULL AND invocations = 0))`);
  // Suspended or queued: due by @at. Leased: due by @at once released (dueOnRelease).
  const due = db.prepare<[Params], { status: string }>(`
    UPDATE runs SET
      wake_at = CASE WHEN status IN ('suspended', 'queued') THEN @at ELSE wake_at END,
      due_on_release = CASE WHEN status IN ('suspended', 'queued') THEN due_on_release ELSE @at END
    WHERE run_id = @runId AND (
      (status IN ('suspended', 'queued') AND (wake_at IS NULL OR wake_at > @at))
      OR (status = 'running' AND lease_owner IS NOT NULL AND (due_on_release IS NULL OR due_on_release > @at)))
    RETURNING status`);
  const selectDue = db.prepare<[number, number], RunRow>(`
    SELECT * FROM runs WHERE wake_at <= ? AND ${NOT_FINISHED} ORDER BY wake_at, run_id LIMIT ?`);
  const selectPage = [false, true].flatMap((byStatus) =>
    [false, true].map((afterCursor) => {
      const where = [
        byStatus ? "status = @status" : "",
        afterCursor ? "(created_at < @createdAt OR (created_at = @createdAt AND run_id < @runId))" : "",
      ].filter(Boolean);
      return db.prepare<[Params], RunRow>(`
        SELECT * FROM runs ${where.length ? `WHERE ${where.join(" AND ")}` : ""}
        ORDER BY created_at DESC, run_id DESC LIMIT @limit`);
    }),
  );
  return { insertRun, selectRun, grantLease, extendLease, suspend, continueStmt, finishStmt, due, selectDue, selectPage };
}
