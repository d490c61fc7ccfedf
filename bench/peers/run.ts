/**
 * Waymark beside its peers (issue 19's table), on this machine, in interleaved rounds: each round
 * runs every workload once on every system (the systems' order rotating from round to round), so
 * a noisy neighbour slows a round's figures alike; each ratio is taken within its round, then
 * the median over rounds. A warm-up round is not counted. Sets up what is missing first: the
 * peers in a cache folder outside the repository (setup.ts), a throwaway PostgreSQL cluster and
 * a Restate server on loopback (services.ts). A peer that cannot run is reported with its error.
 *
 * Run: npm run build && node --import tsx bench/peers/run.ts [rounds, default 5] (the build users install;
 * with --conditions=waymark-source, the sources through tsx)
 */
import { cpus, loadavg } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { ensurePeers, type PeerCache } from "./setup.ts";
import { freePort, type Service, startPostgres, startRestate } from "./services.ts";
import { PeerWorker } from "./workers.ts";
import { fmt, summarise, table } from "../stats.ts";

const ROUNDS = Number(process.argv[2] ?? 5);
const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, "..", "..");

type Key = "waymark" | "aws" | "restate" | "dbos";
const KEYS: readonly Key[] = ["waymark", "aws", "restate", "dbos"];
const LABELS: Record<Key, string> = { waymark: "Waymark", aws: "AWS runner", restate: "Restate", dbos: "DBOS" };

interface System {
  key: Key;
  worker?: PeerWorker;
  mode?: string;
  error?: string;
}

interface Workload {
  label: string;
  op: string;
  args: Record<string, number>;
  /** runs/s: higher is better; ms: lower is better. */
  higherIsBetter: boolean;
}

const WORKLOADS: Record<string, Workload> = {
  seq: { label: "1,000 sequential steps (ms)", op: "seq", args: { n: 1_000 }, higherIsBetter: false },
  resume: { label: "resume + replay, 1,000-step run (ms)", op: "resume", args: { n: 1_000 }, higherIsBetter: false },
  many: { label: "200 runs × 5 steps (runs/s)", op: "many", args: { runs: 200, steps: 5 }, higherIsBetter: true },
};
/** Waymark with synchronous=FULL (an fsync per commit, as the peers' stores do), against the peers' `seq`. */
const FULL_ROW = "  Waymark synchronous=FULL (ms)";

const load = () => loadavg().map((l) => l.toFixed(2)).join(" ");
const fail = (err: unknown) => (err instanceof Error ? err.message : String(err));

async function startWorkers(cache: PeerCache, services: Partial<Record<"postgres" | "restate", Service>>, systems: Record<Key, System>): Promise<void> {
  const spec = (name: Key, script: string, execPath: string, env: Record<string, string> = {}) => ({ name, script, execPath, cwd: cache.dir, env });
  const specs: Record<Key, () => Promise<{ worker: PeerWorker; init: Record<string, string | number> }>> = {
    waymark: async () => ({
      worker: new PeerWorker({ name: "waymark", script: join(here, "waymark-worker.ts"), execPath: process.execPath, execArgv: ["--import", "tsx", ...process.execArgv.filter((a) => a.startsWith("--conditions"))], cwd: repo }),
      init: {},
    }),
    aws: async () => ({ worker: new PeerWorker(spec("aws", join(cache.workers, "aws.mjs"), cache.node22)), init: {} }),
    restate: async () => {
      if (!services.restate) throw new Error("the Restate server did not start (above)");
      const worker = new PeerWorker(spec("restate", join(cache.workers, "restate.mjs"), cache.node22, { RESTATE_LOGGING: "WARN" }));
      return { worker, init: { ...services.restate.urls, port: await freePort() } };
    },
    dbos: async () => {
      if (!services.postgres) throw new Error("PostgreSQL did not start (above)");
      return { worker: new PeerWorker(spec("dbos", join(cache.workers, "dbos.mjs"), process.execPath, { NODE_NO_WARNINGS: "1" })), init: services.postgres.urls };
    },
  };
  for (const key of KEYS) {
    const system = systems[key];
    if (system.error) continue;
    try {
      const { worker, init } = await specs[key]();
      system.worker = worker;
      system.mode = String(await worker.request("init", init));
    } catch (err) {
      system.error = fail(err);
      await system.worker?.stop();
      system.worker = undefined;
    }
  }
}

async function measure(systems: Record<Key, System>): Promise<Map<string, Partial<Record<Key, number>>[]>> {
  const rows = new Map<string, Partial<Record<Key, number>>[]>();
  const put = (row: string, round: number, key: Key, v: number) => {
    const list = rows.get(row) ?? [];
    rows.set(row, list);
    (list[round] ??= {})[key] = v;
  };
  for (let round = -1; round < ROUNDS; round++) {
    const live = KEYS.filter((k) => systems[k].worker);
    const shift = ((round % live.length) + live.length) % live.length;
    const order = [...live.slice(shift), ...live.slice(0, shift)];
    for (const [row, w] of Object.entries(WORKLOADS)) {
      for (const key of order) {
        const system = systems[key];
        if (!system.worker) continue;
        try {
          const v = await system.worker.number(w.op, w.args);
          if (round >= 0) put(row, round, key, v);
          if (key === "waymark" && row === "seq") {
            const full = await system.worker.number("seqFull", w.args);
            if (round >= 0) put(FULL_ROW, round, key, full);
          }
        } catch (err) {
          system.error = `failed in ${round < 0 ? "the warm-up" : `round ${round + 1}`}, ${w.op}: ${fail(err)}`;
          await system.worker.stop();
          system.worker = undefined;
        }
      }
    }
    process.stdout.write(round < 0 ? "w" : ".");
  }
  return rows;
}

function report(rows: Map<string, Partial<Record<Key, number>>[]>): void {
  const peers = KEYS.filter((k) => k !== "waymark");
  const medians: string[][] = [];
  const spreads: string[][] = [];
  for (const [row, w] of [...Object.entries(WORKLOADS), [FULL_ROW, WORKLOADS.seq!] as const]) {
    const rounds = row === FULL_ROW ? (rows.get(FULL_ROW) ?? []).map((r, i) => ({ ...rows.get("seq")?.[i], waymark: r.waymark })) : (rows.get(row) ?? []);
    const label = row === FULL_ROW ? row : w.label;
    const cell = (k: Key) => {
      const values = rounds.map((r) => r[k]).filter((v): v is number => v !== undefined);
      return values.length ? summarise(values) : undefined;
    };
    const ratio = (k: Key) => {
      const values = rounds.filter((r) => r.waymark !== undefined && r[k] !== undefined).map((r) => (w.higherIsBetter ? r.waymark! / r[k]! : r[k]! / r.waymark!));
      return values.length ? `${fmt(summarise(values).median)}×` : "—";
    };
    medians.push([label, ...KEYS.map((k) => (cell(k) ? fmt(cell(k)!.median) : "—")), ...peers.map(ratio)]);
    spreads.push([label, ...KEYS.map((k) => (cell(k) ? `${fmt(cell(k)!.min)}–${fmt(cell(k)!.max)}` : "—"))]);
  }
  console.log(table(["median over rounds", ...KEYS.map((k) => LABELS[k]), ...peers.map((k) => `W vs ${LABELS[k]}`)], medians));
  console.log(
    [
      "",
      "W vs X: how many times faster Waymark is, taken within each round (X's ms ÷ Waymark's ms; Waymark's runs/s ÷ X's), median over rounds.",
      "Where the modes differ (README.md): the AWS runner is a test harness (in-memory checkpoints; its figures end at the handler's",
      "SUCCEEDED, without run()'s fixed 100 ms wait); DBOS's resume wakes a workflow waiting in memory, no replay; Restate and DBOS",
      "fsync each commit, Waymark's NORMAL does not (its FULL row does), the AWS runner keeps nothing.",
      "",
    ].join("\n"),
  );
  console.log(table(["min–max over rounds", ...KEYS.map((k) => LABELS[k])], spreads));
}

async function main(): Promise<void> {
  const cache = ensurePeers();
  const systems = Object.fromEntries(KEYS.map((k) => [k, { key: k }])) as Record<Key, System>;
  const services: Partial<Record<"postgres" | "restate", Service>> = {};
  // Once only, whether the rounds end or a signal comes first (Ctrl-C, a kill, a `timeout`):
  // the servers stop and their temp dirs go either way.
  let cleaning: Promise<unknown> | undefined;
  const cleanup = () =>
    (cleaning ??= (async () => {
      await Promise.allSettled(KEYS.map((k) => systems[k].worker?.stop()));
      await Promise.allSettled([services.restate?.stop(), services.postgres?.stop()]);
    })());
  for (const [signal, code] of [["SIGINT", 130], ["SIGTERM", 143]] as const) process.once(signal, () => void cleanup().finally(() => process.exit(code)));
  try {
    await startPostgres().then((s) => (services.postgres = s)).catch((err) => (systems.dbos.error = `PostgreSQL: ${fail(err)}`));
    await startRestate(cache.restateServer).then((s) => (services.restate = s)).catch((err) => (systems.restate.error = `restate-server: ${fail(err)}`));
    await startWorkers(cache, services, systems);
    console.log(`peers: ${ROUNDS} interleaved rounds after 1 warm-up; ${cpus()[0]?.model ?? "?"} x${cpus().length}; load average ${load()}`);
    console.log(`peers installed in ${cache.dir}`);
    for (const key of KEYS) console.log(`  ${LABELS[key].padEnd(10)} ${systems[key].mode ?? "not measured"}`);
    if (services.postgres) console.log(`  PostgreSQL ${services.postgres.describe}`);
    if (services.restate) console.log(`  restate    ${services.restate.describe}`);
    const rows = await measure(systems);
    console.log(`\nload average at the end ${load()}\n`);
    report(rows);
    const errors = KEYS.filter((k) => systems[k].error);
    if (errors.length) console.log(`\nnot measured, or not to the end:\n${errors.map((k) => `  ${LABELS[k]}: ${systems[k].error}`).join("\n")}`);
  } finally {
    await cleanup();
  }
}

await main();
