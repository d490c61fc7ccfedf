/**
 * The local journal file: one SQLite database holding runs, their records and the wake table.
 * Several processes may open it at once (the dev server and a CLI, or a crash test's restarted
 * process beside the dying one), so schema changes happen in an IMMEDIATE transaction.
 */
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import type BetterSqlite3 from "better-sqlite3";
import { checkpointInBackground, forget } from "./checkpointer.ts";
import { setJournalCacheBudget } from "./journal-rows.ts";
import { type MissingDependencyError, sqliteDriver } from "./sqlite-driver.ts";

/** A better-sqlite3 connection. */
export type Database = BetterSqlite3.Database;

/** The schema version this code reads and writes (`PRAGMA user_version`). */
export const SCHEMA_VERSION = 4;

const SCHEMA_V1 = `
  CREATE TABLE runs (
    run_id           TEXT    PRIMARY KEY,
    workflow         TEXT    NOT NULL,
    input            TEXT,             -- JSON; NULL when the input is undefined
    status           TEXT    NOT NULL,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    wake_at          INTEGER,
    waiting_for      TEXT,
    lease_token      INTEGER NOT NULL, -- the last token granted; the lease's own while one is held
    lease_owner      TEXT,             -- NULL when no lease is held
    lease_expires_at INTEGER,
    invocations      INTEGER NOT NULL,
    result           TEXT,             -- JSON
    error            TEXT,             -- JSON
    finished_at      INTEGER
  );
  CREATE INDEX runs_by_created ON runs (created_at DESC, run_id DESC);
  CREATE INDEX runs_by_status ON runs (status, created_at DESC, run_id DESC);
  CREATE INDEX runs_by_wake ON runs (wake_at) WHERE wake_at IS NOT NULL;

  -- The implicit rowid gives the order records were written in (a new rowid is above every
  -- remaining one; records are deleted only by retention, a whole run at a time).
  CREATE TABLE records (
    run_id   TEXT NOT NULL,
    key      TEXT NOT NULL,
    body     TEXT NOT NULL, -- JSON
    late_for TEXT,
    PRIMARY KEY (run_id, key)
  );

  CREATE TABLE wakes (
    run_id     TEXT    NOT NULL,
    key        TEXT    NOT NULL,
    at         INTEGER NOT NULL,
    reason     TEXT    NOT NULL,
    visible_at INTEGER NOT NULL,
    generation INTEGER NOT NULL,
    PRIMARY KEY (run_id, key)
  );
  CREATE INDEX wakes_by_visible ON wakes (visible_at);

  -- The wake generation counter of earlier versions (a wake's generation is random now:
  -- wake-table.ts); kept, as a worker of such a version may still share the file.
  CREATE TABLE wake_generation (id INTEGER PRIMARY KEY CHECK (id = 1), value INTEGER NOT NULL);
  INSERT INTO wake_generation (id, value) VALUES (1, 0);
`;

/**
 * What a commit survives once it has returned (SQLite's `synchronous` setting, in WAL mode):
 *
 * - `"normal"` (the default): the death of the process (a crash, `kill -9`, an OOM kill). The
 *   commit is in the WAL file (the OS page cache) before it returns; only a power loss or an OS
 *   crash can lose the last commits (never corrupt the file): SQLite fsyncs at checkpoints only.
 * - `"full"`: a power loss or an OS crash too: every commit fsyncs the WAL before it returns.
 *   Records that are ready together (parallel branches, `step.map` items) share one commit, so
 *   one fsync (sqlite-batch.ts).
 */
export type Durability = "normal" | "full";

/** Options of `openLocalDatabase`. */
export interface LocalDatabaseOptions {
  /** What a returned commit survives. Default `"normal"`. See {@link Durability}. */
  durability?: Durability;
  /**
   * About how many bytes of record text the connection keeps in memory of the journals it read
   * or wrote lately, so that a run's next replay reads none of them from the file again while no
   * other process has written to it. Default 32 MiB; 0 keeps none.
   */
  journalCacheBytes?: number;
  /**
   * Where the WAL is checkpointed (copied back into the database file, which SQLite fsyncs):
   * `"background"` (the default), on a worker thread of this process, off the commits' path
   * (lib/local/checkpointer.ts); `"inline"`, SQLite's own automatic checkpoint, inside the
   * commit that crosses 1,000 WAL pages. What a commit survives is the same either way. An
   * in-memory database has no WAL and ignores it.
   */
  checkpoints?: "background" | "inline";
}

/**
 * Opens (creating it and its folder if needed) the local journal file and brings its schema
 * to {@link SCHEMA_VERSION}. Refuses a file written by a newer version. Throws
 * {@link MissingDependencyError} when the optional peer `better-sqlite3` is not installed.
 *
 * @example
 * ```ts
 * const db = openLocalDatabase(".waymark/journal.db", { durability: "full" });
 * const store = new SqliteJournalStore(db);
 * const wakes = new SqliteWakeTable(db);
 * // …
 * db.close();
 * ```
 */
export function openLocalDatabase(file: string, options: LocalDatabaseOptions = {}): Database {
  const durability = options.durability ?? "normal";
  if (durability !== "normal" && durability !== "full") throw new TypeError(`durability must be "normal" or "full", not ${JSON.stringify(durability)}`);
  const checkpoints = options.checkpoints ?? "background";
  if (checkpoints !== "background" && checkpoints !== "inline") throw new TypeError(`checkpoints must be "background" or "inline", not ${JSON.stringify(checkpoints)}`);
  if (file !== ":memory:") mkdirSync(dirname(file), { recursive: true });
  const Driver = sqliteDriver();
  const db = new Driver(file);
  try {
    db.pragma("busy_timeout = 5000");
    enableWal(db);
    db.pragma(durability === "full" ? "synchronous = FULL" : "synchronous = NORMAL");
    migrate(db);
    if (options.journalCacheBytes !== undefined) setJournalCacheBudget(db, options.journalCacheBytes);
    if (checkpoints === "background" && file !== ":memory:" && file !== "" && checkpointInBackground(db, file)) {
      const close = db.close;
      db.close = function (this: Database) {
        forget(this);
        return close.call(this);
      };
    }
    return db;
  } catch (err) {
    db.close();
    throw err;
  }
}

function migrate(db: Database): void {
  db.transaction(() => {
    const version = db.pragma("user_version", { simple: true });
    if (typeof version !== "number") throw new Error(`unexpected user_version ${String(version)}`);
    if (version > SCHEMA_VERSION) {
      throw new Error(`${db.name} has schema version ${version}; this Waymark reads up to ${SCHEMA_VERSION}. Upgrade Waymark.`);
    }
    if (version < 1) db.exec(SCHEMA_V1);
    // v2: incarnations (`step.continueAsNew`); existing runs are in their first.
    if (version < 2) {
      db.exec(`
        ALTER TABLE runs ADD COLUMN incarnation INTEGER NOT NULL DEFAULT 1;
        -- Flow control: slots held by executing runs, and the runs queued for them.
        CREATE TABLE flow_slots (scope TEXT NOT NULL, idx INTEGER NOT NULL, run_id TEXT NOT NULL, expires_at INTEGER NOT NULL, PRIMARY KEY (scope, idx));
        CREATE TABLE flow_queue (scope TEXT NOT NULL, run_id TEXT NOT NULL, at INTEGER NOT NULL, PRIMARY KEY (scope, run_id));
        CREATE INDEX flow_queue_order ON flow_queue (scope, at, run_id);
        CREATE TABLE flow_latest (scope TEXT PRIMARY KEY, run_id TEXT NOT NULL, at INTEGER NOT NULL);`);
    }
    // v3: a signal that reached a leased run leaves it due on release (RunMeta.dueOnRelease).
    if (version < 3) db.exec("ALTER TABLE runs ADD COLUMN due_on_release INTEGER");
    // v4: a run created by a parent's start says so (RunMeta.child); runs before it are NULL.
    if (version < 4) db.exec("ALTER TABLE runs ADD COLUMN child INTEGER");
    if (version < SCHEMA_VERSION) db.pragma(`user_version = ${SCHEMA_VERSION}`);
  }).immediate();
}

/**
 * Switching to WAL needs a moment alone with the file; two processes opening a new file at once
 * can see SQLITE_BUSY here even with a busy timeout, so retry briefly.
 */
function enableWal(db: Database): void {
  for (let attempt = 0; ; attempt++) {
    try {
      if (db.pragma("journal_mode", { simple: true }) === "wal") return;
      db.pragma("journal_mode = WAL");
      return;
    } catch (err) {
      if (attempt >= 50 || !isBusy(err)) throw err;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
    }
  }
}

function isBusy(err: unknown): boolean {
  return typeof err === "object" && err !== null && String((err as { code?: unknown }).code).startsWith("SQLITE_BUSY");
}
