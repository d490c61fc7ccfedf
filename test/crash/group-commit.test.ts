/**
 * Group commit under SIGKILL: a process appends 50 records at once (one transaction, see
 * lib/local/sqlite-batch.ts) and is killed inside that transaction, after 25 of its inserts; or
 * once every append was answered. The file is then opened afresh: all or nothing of the batch,
 * never a part, the file intact, and appends work again. In both durability modes.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { openLocalDatabase } from "../../lib/local/database.ts";
import { SqliteJournalStore } from "../../lib/local/sqlite-store.ts";

const BATCH = 50;
const script = fileURLToPath(new URL("./batch-killer.ts", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "waymark-batch-kill-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function killed(file: string, where: "inside" | "after", durability: "normal" | "full"): Promise<NodeJS.Signals | null> {
  const child = spawn(process.execPath, ["--conditions=waymark-source", "--import", "tsx", script, file, where, durability, String(BATCH)], { stdio: ["ignore", "inherit", "inherit"] });
  return new Promise((resolve, reject) => {
    child.on("error", reject);
    child.on("exit", (_code, signal) => resolve(signal));
  });
}

describe.each(["normal", "full"] as const)("a group commit killed with SIGKILL (durability %s)", (durability) => {
  it.each([
    ["inside", 0],
    ["after", BATCH],
  ] as const)("killed %s its transaction: %i of the batch's records are there, the file is intact, and appends go on", async (where, expected) => {
    const file = join(dir, `${durability}-${where}.db`);
    expect(await killed(file, where, durability)).toBe("SIGKILL");
    const db = openLocalDatabase(file);
    try {
      expect(db.pragma("integrity_check", { simple: true })).toBe("ok");
      expect(db.prepare("SELECT count(*) FROM records WHERE run_id = 'batch'").pluck().get()).toBe(expected);
      const store = new SqliteJournalStore(db);
      const again = await Promise.all(Array.from({ length: BATCH }, (_, i) => store.appendRecord("batch", { key: `step#s${i}`, body: { type: "step", result: i } })));
      expect(again.every((r) => r.written)).toBe(true);
      expect(db.prepare("SELECT count(*) FROM records WHERE run_id = 'batch'").pluck().get()).toBe(BATCH);
    } finally {
      db.close();
    }
  }, 300_000);
});
