/**
 * A background checkpoint under SIGKILL (lib/local/checkpointer.ts): a process appends records
 * one commit each while its worker thread checkpoints the WAL, and is killed once the worker has
 * reported three checkpoints, with appends and checkpoints both still going. The file is then
 * opened afresh: intact, and every append that was answered is there, in one unbroken run.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { openLocalDatabase } from "../../lib/local/database.ts";

const script = fileURLToPath(new URL("./checkpoint-writer.ts", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "waymark-checkpoint-kill-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs the writer until its worker reported `checkpoints` checkpoints, then SIGKILLs it; the appends it had acknowledged. */
function killedAfter(file: string, checkpoints: number): Promise<{ acked: number; signal: NodeJS.Signals | null }> {
  const child = spawn(process.execPath, ["--conditions=waymark-source", "--import", "tsx", script, file], { stdio: ["ignore", "pipe", "inherit"] });
  let acked = 0;
  let seen = 0;
  createInterface({ input: child.stdout }).on("line", (line) => {
    const [what, n] = line.split(" ");
    if (what === "acked") acked = Number(n);
    if (what === "error") child.kill("SIGKILL");
    if (what === "checkpoint" && ++seen === checkpoints) child.kill("SIGKILL");
  });
  return new Promise((resolve, reject) => {
    child.on("error", reject);
    child.on("exit", (_code, signal) => resolve({ acked, signal }));
  });
}

describe("a background checkpoint killed with SIGKILL", () => {
  it("leaves the file intact with every answered append in it", async () => {
    const file = join(dir, "killed.db");
    const { acked, signal } = await killedAfter(file, 3);
    expect(signal).toBe("SIGKILL");
    // Three checkpoints of 256 commits each were asked for: at least that many were answered.
    expect(acked).toBeGreaterThanOrEqual(3 * 256 - 32);
    const db = openLocalDatabase(file, { checkpoints: "inline" });
    try {
      expect(db.pragma("integrity_check", { simple: true })).toBe("ok");
      const results = db.prepare("SELECT json_extract(body, '$.result') FROM records WHERE run_id = 'w'").pluck().all() as number[];
      expect(results.length).toBeGreaterThanOrEqual(acked);
      expect(new Set(results).size).toBe(results.length);
      expect(Math.max(...results)).toBe(results.length - 1);
    } finally {
      db.close();
    }
  }, 300_000);
});
