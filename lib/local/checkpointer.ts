/**
 * WAL checkpoints off the commit path. In WAL mode a commit appends its pages to the `-wal`
 * file; a checkpoint copies them back into the database file and fsyncs it, so the WAL can start
 * over. SQLite's own automatic checkpoint runs inside the commit that crosses 1,000 WAL pages, on
 * the thread that committed: with one record per commit (a sequential run) that is about a
 * third of an append's time (bench/checkpoints.ts), paid by whichever step happened to cross it.
 *
 * Here a worker thread does it instead, as servers built on SQLite do: after every
 * {@link COMMITS_PER_CHECKPOINT} commits of a connection (counted by the group commit,
 * sqlite-batch.ts) the worker opens the file, runs a PASSIVE checkpoint (it never blocks a
 * writer or a reader, and waits for none) and closes it. The connection keeps SQLite's automatic
 * checkpoint as a backstop at {@link BACKSTOP_PAGES}: if the worker falls behind, cannot start or
 * fails on a file, the WAL still stops growing there, as before. A checkpoint is crash-safe
 * wherever it runs (a SIGKILL half-way leaves the WAL to be copied again); nothing about what a
 * commit survives changes ({@link Durability}).
 *
 * One worker serves every file of the process; it is started by the first file that needs it
 * and never keeps the process alive.
 */
import { createRequire } from "node:module";
import { resolve } from "node:path";
import { Worker } from "node:worker_threads";
import type { Database } from "./database.ts";
import { SQLITE_DRIVER } from "./sqlite-driver.ts";

/** Commits of one connection between two requests for a checkpoint (about 560 WAL pages of single-record commits). */
export const COMMITS_PER_CHECKPOINT = 256;
/** SQLite's automatic checkpoint on the connection itself, kept for when the worker does not keep up. */
export const BACKSTOP_PAGES = 4_000;
/** SQLite's default automatic checkpoint, put back on a file the worker failed on. */
const SQLITE_DEFAULT_PAGES = 1_000;

/** What the worker answers per checkpoint: SQLite's `wal_checkpoint` row, or the error it met. */
export type CheckpointReport = { file: string; busy: number; log: number; checkpointed: number } | { file: string; error: string };

/** The worker: CommonJS, evaluated (no file of its own to find from dist/, lib/ or a bundle). */
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const Driver = require(workerData.driver);
const due = new Set();
let scheduled = false;
parentPort.on("message", (file) => {
  due.add(file);
  if (!scheduled) { scheduled = true; setImmediate(run); }
});
function run() {
  scheduled = false;
  for (const file of due) {
    due.delete(file);
    try {
      const db = new Driver(file, { fileMustExist: true });
      try {
        const row = db.pragma("wal_checkpoint(PASSIVE)")[0] || {};
        parentPort.postMessage({ file, busy: row.busy, log: row.log, checkpointed: row.checkpointed });
      } finally {
        db.close();
      }
    } catch (err) {
      parentPort.postMessage({ file, error: String(err && err.message || err) });
    }
  }
}
`;

/** A connection whose checkpoints the worker makes. */
interface Entry {
  db: Database;
  file: string;
  untilCheckpoint: number;
}

const byDb = new WeakMap<Database, Entry>();
/** The open entries by file, for the worker's answers (a file may be open on several connections). */
const byFile = new Map<string, Set<Entry>>();
let worker: Worker | undefined;
let workerFailed = false;
const listeners = new Set<(report: CheckpointReport) => void>();

/**
 * Hands the checkpoints of `db` (a connection to `file`, in WAL mode) to the worker. Returns
 * false, leaving SQLite's own automatic checkpoint, when the worker cannot run.
 */
export function checkpointInBackground(db: Database, file: string): boolean {
  if (workerFailed) return false;
  const entry: Entry = { db, file: resolve(file), untilCheckpoint: COMMITS_PER_CHECKPOINT };
  byDb.set(db, entry);
  let open = byFile.get(entry.file);
  if (!open) byFile.set(entry.file, (open = new Set()));
  open.add(entry);
  db.pragma(`wal_autocheckpoint = ${BACKSTOP_PAGES}`);
  return true;
}

/**
 * The counter of commits of `db`'s group commit: asks the worker for a checkpoint every
 * {@link COMMITS_PER_CHECKPOINT}. Undefined when the connection checkpoints inline.
 */
export function commitCounter(db: Database): (() => void) | undefined {
  const entry = byDb.get(db);
  if (!entry) return undefined;
  return () => {
    if (--entry.untilCheckpoint > 0) return;
    entry.untilCheckpoint = COMMITS_PER_CHECKPOINT;
    request(entry);
  };
}

/** Stops handing `db`'s checkpoints to the worker (its connection is closing). */
export function forget(db: Database): void {
  const entry = byDb.get(db);
  if (!entry) return;
  byDb.delete(db);
  const open = byFile.get(entry.file);
  open?.delete(entry);
  if (open?.size === 0) byFile.delete(entry.file);
}

/** Calls `fn` with every report of the worker until the returned function is called. */
export function onCheckpoint(fn: (report: CheckpointReport) => void): () => void {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

function request(entry: Entry): void {
  const w = worker ?? start();
  if (w) w.postMessage(entry.file);
  else inline(entry);
}

function start(): Worker | undefined {
  try {
    const driver = createRequire(import.meta.url).resolve(SQLITE_DRIVER);
    worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { driver } });
  } catch {
    return failed();
  }
  worker.on("message", (report: CheckpointReport) => {
    if ("error" in report) for (const entry of byFile.get(report.file) ?? []) inline(entry);
    for (const fn of listeners) fn(report);
  });
  worker.on("error", failed);
  // After the listeners: adding a "message" listener refs the worker's port again.
  worker.unref();
  return worker;
}

/** The worker cannot run: every connection goes back to SQLite's own checkpoint. */
function failed(): undefined {
  workerFailed = true;
  worker = undefined;
  for (const open of byFile.values()) for (const entry of open) inline(entry);
  return undefined;
}

/** `entry`'s connection checkpoints itself again, as SQLite does by default. */
function inline(entry: Entry): void {
  forget(entry.db);
  if (entry.db.open) entry.db.pragma(`wal_autocheckpoint = ${SQLITE_DEFAULT_PAGES}`);
}
