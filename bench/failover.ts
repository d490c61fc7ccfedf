/**
 * Failover on one machine, measured from outside with real worker processes (test/crash/worker.ts)
 * on one SQLite journal file, every worker with the runtime's default settings (lease 10 s,
 * watchdog 5 s, concurrency 8). Kills are SIGKILL.
 *
 *   1. survivor takeover: two workers share long relay runs; the one holding the most leases is
 *      killed (a replacement starts at once). Per step body the dead worker had in flight: kill →
 *      the same body (same idempotency key) started by another worker. Goal: p90 ≤ 1 s.
 *   2. restart: the only worker is killed, a new one starts. Its `ready` (once `start()` has
 *      resolved) → its first re-started body. Goal ≤ 100 ms.
 *   3. kill storms against 150 runs on up to 3 workers: a random live worker is killed every
 *      0.5–2 s (and, second, every 5–200 ms), a replacement spawned at once. Runs finished during
 *      the storm, kill → killed bodies re-started, step bodies that ran twice.
 *
 * Figures only, never assertions. Run: node --conditions=waymark-source --import tsx bench/failover.ts
 * (optionally `takeover`, `restart`, `storm`, `fast-storm` to run one scenario). With BENCH_DEBUG=1
 * the storms list every killed body that took over 3 s to re-start, with the workers ready then
 * (and, with WORKER_LOG=1 too, the workers' `recover` entries for its run).
 */
import { cpus } from "node:os";
import { setTimeout as delay } from "node:timers/promises";
import { TERMINAL_STATUSES } from "../lib/ports.ts";
import { CrashLab, type WorkerProcess } from "../test/crash/harness.ts";
import type { WorkerEvent } from "../test/crash/worker.ts";
import { relayFlow } from "../test/crash/workflows.ts";
import { fmt, table } from "./stats.ts";
import { quantiles } from "./quantiles.ts";

const WORKER_DEADLINE_MS = 30 * 60_000;

interface Spawned {
  label: string;
  process: WorkerProcess;
  spawnedAt: number;
}

/** Workers of one lab, labelled w1, w2, … in spawn order. */
class Crew {
  private n = 0;
  readonly all: Spawned[] = [];
  constructor(
    private readonly lab: CrashLab,
    private readonly runs: string[],
  ) {}

  spawn(): Spawned {
    const label = `w${++this.n}`;
    const s = { label, spawnedAt: Date.now(), process: this.lab.spawn({ label, runs: this.runs, deadlineMs: WORKER_DEADLINE_MS }) };
    this.all.push(s);
    return s;
  }

  alive(): Spawned[] {
    return this.all.filter((w) => !w.process.exited);
  }

  ready(events: WorkerEvent[]): Spawned[] {
    const ready = new Set(events.filter((e) => e.type === "ready").map((e) => e.worker));
    return this.alive().filter((w) => ready.has(w.label));
  }
}

async function waitFor<T>(what: string, check: () => Promise<T | undefined> | T | undefined, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`bench: timed out waiting for ${what}`);
    await delay(5);
  }
}

/** Step bodies a worker started and never completed (by the events it wrote before it died). */
function inFlight(lab: CrashLab, label: string): string[] {
  const completed = new Set(lab.events().filter((e) => e.worker === label && e.type === "step" && e.step?.outcome === "completed").map((e) => `${e.step?.runId}/${e.step?.stepId}`));
  return [...new Set(lab.log.read().filter((x) => x.worker === label && !completed.has(x.key)).map((x) => x.key))];
}

/** For each key, the first start of its body after `since` by a worker other than `label` (ms after `since`). */
function restarts(lab: CrashLab, keys: readonly string[], label: string, since: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const x of lab.log.read()) {
    if (x.worker === label || x.at < since || !keys.includes(x.key) || out.has(x.key)) continue;
    out.set(x.key, x.at - since);
  }
  return out;
}

async function startRelays(lab: CrashLab, ids: readonly string[], input: { legs: number; legMs: number; restMs: number }): Promise<void> {
  for (const runId of ids) await lab.client.start(relayFlow, { runId, input });
}

/** 1. Survivor takeover after a SIGKILL. */
async function takeover(kills: number): Promise<number[]> {
  const lab = new CrashLab();
  const ids = Array.from({ length: 8 }, (_, i) => `relay-${i + 1}`);
  const crew = new Crew(lab, ids);
  const latencies: number[] = [];
  try {
    crew.spawn();
    crew.spawn();
    await waitFor("two ready workers", () => (crew.ready(lab.events()).length >= 2 ? true : undefined));
    // Long legs, so that a kill always finds bodies in flight; short rests move runs between workers.
    await startRelays(lab, ids, { legs: 10_000, legMs: 1_500, restMs: 20 });
    for (let k = 0; k < kills; k++) {
      await waitFor("two ready workers", () => (crew.ready(lab.events()).length >= 2 ? true : undefined));
      await delay(800 + Math.random() * 1_500); // a random point inside the bodies
      const owners = new Map(lab.events().filter((e) => e.type === "ready").map((e) => [e.worker, e.owner ?? "?"]));
      const leases = new Map<string, number>();
      for (const id of ids) {
        const owner = (await lab.client.get(id)).lease?.owner ?? "";
        for (const [label, prefix] of owners) if (owner.startsWith(`${prefix}:`)) leases.set(label, (leases.get(label) ?? 0) + 1);
      }
      const victim = crew.ready(lab.events()).sort((a, b) => (leases.get(b.label) ?? 0) - (leases.get(a.label) ?? 0))[0];
      if (!victim) throw new Error("bench: no victim");
      const killedAt = Date.now();
      victim.process.child.kill("SIGKILL");
      await victim.process.exit;
      crew.spawn();
      const lost = inFlight(lab, victim.label);
      const moved = await waitFor(`the bodies of ${victim.label} to re-start elsewhere`, () => {
        const r = restarts(lab, lost, victim.label, killedAt);
        return r.size === lost.length ? r : undefined;
      });
      latencies.push(...moved.values());
      process.stdout.write(`  kill ${k + 1}/${kills}: ${lost.length} bodies in flight, re-started after ${[...moved.values()].map((v) => fmt(v)).join(", ")} ms\n`);
    }
    return latencies;
  } finally {
    await lab.dispose();
  }
}

/** 2. A restarted worker: ready → its first re-started body (and kill → that body). */
async function restart(kills: number): Promise<{ readyToBody: number[]; killToBody: number[]; killToReady: number[] }> {
  const lab = new CrashLab();
  const ids = Array.from({ length: 4 }, (_, i) => `relay-${i + 1}`);
  const crew = new Crew(lab, ids);
  const out = { readyToBody: [] as number[], killToBody: [] as number[], killToReady: [] as number[] };
  try {
    let current = crew.spawn();
    await waitFor("the first worker to be ready", () => (crew.ready(lab.events()).length === 1 ? true : undefined));
    await startRelays(lab, ids, { legs: 10_000, legMs: 2_000, restMs: 20 });
    for (let k = 0; k < kills; k++) {
      const label = current.label;
      await waitFor(`${label} to run bodies`, () => (lab.log.read().some((x) => x.worker === label) ? true : undefined));
      await delay(500 + Math.random() * 1_000);
      const killedAt = Date.now();
      current.process.child.kill("SIGKILL");
      await current.process.exit;
      current = crew.spawn();
      const next = current.label;
      const ready = await waitFor(`${next} to be ready`, () => lab.events().find((e) => e.worker === next && e.type === "ready"));
      const first = await waitFor(`${next}'s first body`, () => lab.log.read().find((x) => x.worker === next));
      out.readyToBody.push(first.at - ready.at);
      out.killToBody.push(first.at - killedAt);
      out.killToReady.push(ready.at - killedAt);
      process.stdout.write(`  restart ${k + 1}/${kills}: kill → ready ${fmt(ready.at - killedAt)} ms, ready → first body ${fmt(first.at - ready.at)} ms\n`);
    }
    return out;
  } finally {
    await lab.dispose();
  }
}

interface StormResult {
  finished: number;
  runs: number;
  durationMs: number;
  kills: number;
  /** Kill → each killed in-flight body re-started elsewhere, ms. */
  takeovers: number[];
  /** The same, split by whether another worker was ready when the kill came. */
  withSurvivor: number[];
  withoutSurvivor: number[];
  /** Bodies the killed workers had in flight that had not re-started when the storm ended. */
  stranded: number;
  /** Step bodies started more than once, beyond the ones a kill interrupted. */
  unexplainedRepeats: number;
  /** Workers spawned, and how many of them became ready before they were killed. */
  spawned: number;
  becameReady: number;
  /** Spawn → ready of the workers that got there, ms. */
  startMs: number[];
}

/** 3. A kill storm: a random live worker killed every `minMs`–`maxMs`, replaced at once, until every run finished or `capMs`. */
async function storm(minMs: number, maxMs: number, capMs: number): Promise<StormResult> {
  const lab = new CrashLab();
  const RUNS = 150;
  const ids = Array.from({ length: RUNS }, (_, i) => `storm-${i + 1}`);
  const crew = new Crew(lab, ids);
  const kills: Array<{ label: string; at: number }> = [];
  try {
    for (let i = 0; i < 3; i++) crew.spawn();
    await waitFor("three ready workers", () => (crew.ready(lab.events()).length === 3 ? true : undefined));
    await startRelays(lab, ids, { legs: 12, legMs: 300, restMs: 100 });
    const began = Date.now();
    let finished = 0;
    while (Date.now() - began < capMs) {
      const runs = await Promise.all(ids.map((id) => lab.client.get(id)));
      finished = runs.filter((r) => TERMINAL_STATUSES.has(r.status)).length;
      if (finished === RUNS) break;
      await delay(minMs + Math.random() * (maxMs - minMs));
      const alive = crew.alive();
      const victim = alive[Math.floor(Math.random() * alive.length)];
      if (victim) {
        kills.push({ label: victim.label, at: Date.now() });
        victim.process.child.kill("SIGKILL");
      }
      while (crew.alive().length < 3) crew.spawn();
    }
    const durationMs = Date.now() - began;
    if (finished < RUNS) finished = (await Promise.all(ids.map((id) => lab.client.get(id)))).filter((r) => TERMINAL_STATUSES.has(r.status)).length;
    const takeovers: number[] = [];
    const withSurvivor: number[] = [];
    const withoutSurvivor: number[] = [];
    let stranded = 0;
    let interrupted = 0;
    const events = lab.events();
    const readyAt = new Map(events.filter((e) => e.type === "ready").map((e) => [e.worker, e.at]));
    const killedAt = new Map(kills.map((k) => [k.label, k.at]));
    for (const kill of kills) {
      const lost = inFlight(lab, kill.label);
      interrupted += lost.length;
      const moved = restarts(lab, lost, kill.label, kill.at);
      takeovers.push(...moved.values());
      stranded += lost.length - moved.size;
      // Was another worker ready (and not yet killed) at the moment of this kill?
      if (process.env.BENCH_DEBUG) {
        for (const [key, ms] of moved) {
          if (ms < 3_000) continue;
          const runId = key.split("/")[0] ?? "";
          const by = lab.log.read().find((x) => x.key === key && x.at >= kill.at && x.worker !== kill.label)?.worker;
          const ready = crew.all.filter((w) => w.label !== kill.label && (readyAt.get(w.label) ?? Infinity) < kill.at && (killedAt.get(w.label) ?? Infinity) > kill.at).map((w) => w.label);
          const inv = events.filter((e) => e.type === "invocation" && e.runId === runId && e.at >= kill.at && e.at <= kill.at + ms).map((e) => `${e.worker}:${e.result}@${e.at - kill.at}`);
          const rec = events.filter((e) => e.type === "log" && (e.entry?.runId === runId || String(e.entry?.event).startsWith("dbg-peer")) && e.at >= kill.at - 100 && e.at <= kill.at + ms).map((e) => `${e.worker}:${String(e.entry?.event)}/${String(e.entry?.cause ?? e.entry?.outcome ?? "")}@${e.at - kill.at}`);
          console.log(`  slow: ${key} killed in ${kill.label} at +${kill.at - began}, re-started by ${by} after ${ms} ms; ready then: ${ready.join(",")}; invocations: ${inv.join(" ")}; logs: ${rec.join(" ")}`);
        }
      }
      const survivor = crew.all.some((w) => w.label !== kill.label && (readyAt.get(w.label) ?? Infinity) < kill.at && (killedAt.get(w.label) ?? Infinity) > kill.at);
      (survivor ? withSurvivor : withoutSurvivor).push(...moved.values());
    }
    const perKey = new Map<string, number>();
    for (const x of lab.log.read()) perKey.set(x.key, (perKey.get(x.key) ?? 0) + 1);
    const repeats = [...perKey.values()].reduce((n, c) => n + c - 1, 0);
    const startMs = crew.all.flatMap((w) => {
      const at = readyAt.get(w.label);
      return at === undefined ? [] : [at - w.spawnedAt];
    });
    return { finished, runs: RUNS, durationMs, kills: kills.length, takeovers, withSurvivor, withoutSurvivor, stranded, unexplainedRepeats: Math.max(0, repeats - interrupted), spawned: crew.all.length, becameReady: readyAt.size, startMs };
  } finally {
    await lab.dispose();
  }
}

function row(label: string, values: readonly number[], goal: string, met?: boolean): string[] {
  if (values.length === 0) return [label, "0", "-", "-", "-", goal, ""];
  const q = quantiles(values);
  return [label, String(values.length), fmt(q.p50), fmt(q.p90), fmt(q.max), goal, met === undefined ? "" : met ? "met" : "MISSED"];
}

async function main(): Promise<void> {
  const only = process.argv[2];
  console.log("Waymark failover bench: real worker processes on one SQLite journal, default runtime settings, SIGKILL");
  console.log(`node ${process.version}, ${cpus()[0]?.model ?? "unknown CPU"} x${cpus().length}, ${process.platform}/${process.arch}`);
  console.log("Note: shared, noisy machine; every worker is a fresh node + tsx process. Medians and p90 over all samples.\n");
  const rows: string[][] = [];
  const notes: string[] = [];
  if (!only || only === "takeover") {
    console.log("1. survivor takeover");
    const t = await takeover(12);
    rows.push(row("1. kill → dead worker's body re-started by a survivor (ms)", t, "p90 ≤ 1000", quantiles(t).p90 <= 1_000));
  }
  if (!only || only === "restart") {
    console.log("2. restart");
    const r = await restart(10);
    rows.push(row("2. restarted worker: ready → first re-started body (ms)", r.readyToBody, "≤ 100", quantiles(r.readyToBody).max <= 100));
    rows.push(row("   kill → restarted worker ready (node + tsx start, recovery) (ms)", r.killToReady, ""));
    rows.push(row("   kill → first re-started body, no survivor (ms)", r.killToBody, ""));
  }
  for (const [name, min, max, cap] of [
    ["storm", 500, 2_000, 300_000],
    ["fast-storm", 5, 200, 120_000],
  ] as const) {
    if (only && only !== name) continue;
    console.log(`3. ${name}: a kill every ${min}–${max} ms`);
    const s = await storm(min, max, cap);
    rows.push(row(`3. storm ${min}–${max} ms: kill → killed body re-started (ms)`, s.takeovers, ""));
    rows.push(row("   of which another worker was ready at the kill", s.withSurvivor, ""));
    rows.push(row("   of which none was (waits for a new worker to start)", s.withoutSurvivor, ""));
    notes.push(
      `storm ${min}–${max} ms: ${s.finished}/${s.runs} runs finished during the storm (${(s.durationMs / 1000).toFixed(1)} s, ${s.kills} kills${s.finished === s.runs ? ", stopped when the last run finished" : `, cap ${cap / 1000} s`}); ` +
        `${s.stranded} killed bodies not re-started by then; ${s.unexplainedRepeats} body repeats beyond the killed ones; ` +
        `${s.becameReady}/${s.spawned} workers became ready before being killed (spawn → ready p50 ${fmt(quantiles(s.startMs).p50)} ms)`,
    );
  }
  console.log(`\n${table(["measurement", "n", "p50", "p90", "max", "goal", ""], rows)}`);
  for (const n of notes) console.log(n);
}

await main();
