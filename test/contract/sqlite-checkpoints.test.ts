/**
 * WAL checkpoints on a worker thread (lib/local/checkpointer.ts): a connection's group commit
 * asks for one every 256 commits; the worker checkpoints the file without the connection
 * waiting, SQLite's own automatic checkpoint stays as a backstop, and a file the worker fails on
 * goes back to checkpointing inline. Real files; the tests wait for the worker's reports.
 */
import { mkdtempSync, rmSync, unlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { BACKSTOP_PAGES, type CheckpointReport, COMMITS_PER_CHECKPOINT, onCheckpoint } from "../../lib/local/checkpointer.ts";
import { openLocalDatabase } from "../../lib/local/database.ts";
import { SqliteJournalStore } from "../../lib/local/sqlite-store.ts";

const dir = mkdtempSync(join(tmpdir(), "waymark-checkpoints-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The worker's next report on `file`. */
function nextReport(file: string): Promise<CheckpointReport> {
  return new Promise((done) => {
    const stop = onCheckpoint((report) => {
      if (report.file !== resolve(file)) return;
      stop();
      done(report);
    });
  });
}

const append = (store: SqliteJournalStore, run: string, i: number) => store.appendRecord(run, { key: `step#s${i}`, body: { type: "step", result: i } });

describe("SQLite checkpoints off the commit path", () => {
  it("hands a file's checkpoints to the worker after 256 commits, keeping SQLite's own as a backstop; every record stays", async () => {
    const file = join(dir, "background.db");
    const db = openLocalDatabase(file);
    const store = new SqliteJournalStore(db);
    expect(db.pragma("wal_autocheckpoint", { simple: true })).toBe(BACKSTOP_PAGES);
    const report = nextReport(file);
    for (let i = 0; i < COMMITS_PER_CHECKPOINT; i++) await append(store, "r", i);
    const got = await report;
    expect(got).toMatchObject({ busy: 0 });
    if ("error" in got) throw new Error(got.error);
    // One record per commit writes a couple of pages: the WAL held them, the worker copied them all.
    expect(got.log).toBeGreaterThanOrEqual(COMMITS_PER_CHECKPOINT);
    expect(got.checkpointed).toBe(got.log);
    // Appends go on over the checkpointed WAL, and another connection reads every record.
    for (let i = COMMITS_PER_CHECKPOINT; i < COMMITS_PER_CHECKPOINT + 10; i++) await append(store, "r", i);
    const reader = openLocalDatabase(file, { checkpoints: "inline" });
    expect(reader.prepare("SELECT count(*) FROM records WHERE run_id = 'r'").pluck().get()).toBe(COMMITS_PER_CHECKPOINT + 10);
    reader.close();
    db.close();
  });

  it("leaves SQLite's own automatic checkpoint with checkpoints: 'inline', and refuses an unknown mode before opening anything", () => {
    const db = openLocalDatabase(join(dir, "inline.db"), { checkpoints: "inline" });
    expect(db.pragma("wal_autocheckpoint", { simple: true })).toBe(1000);
    db.close();
    expect(() => openLocalDatabase(join(dir, "never.db"), { checkpoints: "sometimes" as "inline" })).toThrow(/checkpoints must be "background" or "inline", not "sometimes"/);
  });

  it("puts a file the worker fails on back to checkpointing inline", async () => {
    const file = join(dir, "vanished.db");
    const db = openLocalDatabase(file);
    const store = new SqliteJournalStore(db);
    // The connection keeps the unlinked file; the worker, opening it by name, cannot.
    unlinkSync(file);
    const report = nextReport(file);
    for (let i = 0; i < COMMITS_PER_CHECKPOINT; i++) await append(store, "r", i);
    expect(await report).toMatchObject({ error: expect.stringMatching(/unable to open|does not exist|no such file/i) });
    expect(db.pragma("wal_autocheckpoint", { simple: true })).toBe(1000);
    // Still writing, now checkpointing itself.
    await append(store, "r", COMMITS_PER_CHECKPOINT);
    expect(db.prepare("SELECT count(*) FROM records WHERE run_id = 'r'").pluck().get()).toBe(COMMITS_PER_CHECKPOINT + 1);
    db.close();
  });
});
