/**
 * A journal on a real SQLite file with the engine and client wired by hand, so a test can put a
 * fault-injecting wrapper between them and the store (the local runtime wires the store itself).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type AnyWorkflow, Client, createRegistry, Engine, type EngineOptions, type JournalStore, type Wake, type WakeQueue } from "waymark";
import { openLocalDatabase } from "../../lib/local/database.ts";
import { SqliteJournalStore } from "../../lib/local/sqlite-store.ts";
import { SqliteWakeTable } from "../../lib/local/wake-table.ts";
import { VirtualClock } from "waymark/testing";

export interface SqliteLab {
  /** The journal file (a local runtime may open it too). */
  file: string;
  store: SqliteJournalStore;
  wakes: SqliteWakeTable;
  /** Every wake scheduled, in order. */
  scheduled: Wake[];
  clock: VirtualClock;
  workflows: ReturnType<typeof createRegistry>;
  client(store?: JournalStore, wakes?: WakeQueue): Client;
  engine(owner: string, store?: JournalStore, extra?: Partial<EngineOptions>): Engine;
  close(): void;
}

export function sqliteLab(workflows: AnyWorkflow[]): SqliteLab {
  const dir = mkdtempSync(join(tmpdir(), "waymark-hardening-"));
  const file = join(dir, "journal.db");
  const db = openLocalDatabase(file);
  const store = new SqliteJournalStore(db);
  const scheduled: Wake[] = [];
  const wakes = new SqliteWakeTable(db, { onSchedule: (w) => scheduled.push(w) });
  const clock = new VirtualClock(Date.UTC(2026, 10, 30, 12));
  const registry = createRegistry(workflows);
  return {
    file,
    store,
    wakes,
    scheduled,
    clock,
    workflows: registry,
    client: (s = store, w: WakeQueue = wakes) => new Client({ store: s, wakes: w, clock, workflows: registry }),
    engine: (owner, s = store, extra = {}) => new Engine({ store: s, wakes, clock, workflows: registry, owner, leaseTtlMs: 30_000, ...extra }),
    close: () => {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
