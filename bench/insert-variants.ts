/**
 * The journal's append statement against the raw INSERT it is measured by (bench/perf.ts's
 * "÷ raw INSERT"): the same 1,000 records through each form of the statement, interleaved rounds,
 * medians. What each form adds: named parameters (bound from an object), and the probe of the
 * run's cancellation riding in `RETURNING` (lib/local/sqlite-batch.ts uses the named form).
 *
 * Run: node --conditions=waymark-source --import tsx bench/insert-variants.ts [rounds]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openLocalDatabase } from "../lib/local/database.ts";
import { sampleRecordJson } from "./sample-record.ts";
import { summarise } from "./stats.ts";

const ROUNDS = Number(process.argv[2] ?? 12);
const N = 1_000;
const dir = mkdtempSync(join(tmpdir(), "waymark-insert-variants-"));
try {
  const db = openLocalDatabase(join(dir, "variants.db"));
  const insert = "INSERT INTO records (run_id, key, body, late_for)";
  const probe = "RETURNING (SELECT body FROM records WHERE run_id";
  const raw = db.prepare<[string, string, string, null]>(`${insert} VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`);
  const named = db.prepare<[{ j: string; k: string; b: string; l: null; p: string }]>(`${insert} VALUES (@j, @k, @b, @l) ON CONFLICT DO NOTHING ${probe} = @j AND key = @p) AS pb`);
  const positional = db.prepare<[string, string, string, null, string, string]>(`${insert} VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING ${probe} = ? AND key = ?) AS pb`);
  const exists = db.prepare<[string, string, string, null, string, string]>(`${insert} VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING (SELECT 1 FROM records WHERE run_id = ? AND key = ?)`).raw();
  const probeAlone = db.prepare<[string, string]>("SELECT 1 FROM records WHERE run_id = ? AND key = ?").pluck();
  const bodies = Array.from({ length: N }, (_, i) => sampleRecordJson(i));
  const keys = Array.from({ length: N }, (_, i) => `step#${i === 0 ? "s" : `s#${i + 1}`}`);
  let seq = 0;
  const forms: Record<string, (run: string, i: number) => unknown> = {
    "raw INSERT, positional, .run()": (run, i) => raw.run(run, keys[i] ?? "", bodies[i] ?? "", null),
    "body probe, named parameters, .all()": (run, i) => named.all({ j: run, k: keys[i] ?? "", b: bodies[i] ?? "", l: null, p: "cancel" }),
    "body probe, positional, .all()": (run, i) => positional.all(run, keys[i] ?? "", bodies[i] ?? "", null, run, "cancel"),
    "exists probe, positional, .raw().all() (used)": (run, i) => exists.all(run, keys[i] ?? "", bodies[i] ?? "", null, run, "cancel"),
    "raw INSERT .run(), then the probe's SELECT .get()": (run, i) => {
      raw.run(run, keys[i] ?? "", bodies[i] ?? "", null);
      return probeAlone.get(run, "cancel");
    },
  };
  const times: Record<string, number[]> = {};
  for (let round = -2; round < ROUNDS; round++) {
    for (const [name, write] of Object.entries(forms)) {
      const run = `variant-${++seq}`;
      const t0 = performance.now();
      for (let i = 0; i < N; i++) write(run, i);
      const ms = performance.now() - t0;
      if (round >= 0) (times[name] ??= []).push(ms);
    }
  }
  const base = summarise(times["raw INSERT, positional, .run()"] ?? []).median;
  console.log(`${N.toLocaleString("en")} appends of the same records, ${ROUNDS} interleaved rounds (medians):`);
  for (const [name, values] of Object.entries(times)) {
    const m = summarise(values).median;
    console.log(`  ${name.padEnd(46)} ${m.toFixed(1).padStart(6)} ms   ${(m / base).toFixed(2)}× the raw INSERT`);
  }
  db.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
