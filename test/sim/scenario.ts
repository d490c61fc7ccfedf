/**
 * One simulated story, decided by its tape: which runs start, how many workers (each the real
 * engine in the real local host loop, `WakePool`) share one store (memory or a SQLite file in
 * memory), and what goes wrong while faults are on — crashes and restarts, frozen workers that
 * come back, clock jumps, duplicated and dropped wakes, store calls that fail or lose their
 * answers, signals and cancels from the client. Then the faults stop, and every run must end
 * within a bounded simulated time (liveness); final-checks.ts reads the end state.
 */
import { Client } from "../../lib/client.ts";
import type { StepRunContext } from "../../lib/core/definition.ts";
import { createRegistry } from "../../lib/core/registry.ts";
import type { JournalStore, Lease } from "../../lib/ports.ts";
import { MemoryJournalStore } from "../../lib/testing/memory-store.ts";
import { openLocalDatabase } from "../../lib/local/database.ts";
import { SqliteJournalStore } from "../../lib/local/sqlite-store.ts";
import { InProcessStarts, WakePool } from "../../lib/wake-loop.ts";
import { Ledger, runOf, type Exec, type Violation } from "./ledger.ts";
import { storyEvents } from "./events.ts";
import { finalChecks } from "./final-checks.ts";
import { faultChance, flowFreezer, flowPressure, isFlowCall, planFlowRuns, type Story } from "./flow-story.ts";
import { planRuns } from "./plans.ts";
import { simClient } from "./sim-client.ts";
import { inExec, SimEngine } from "./sim-engine.ts";
import { actorStore, actorWakes, type Fault, type FaultPicker, SimWakeTable } from "./sim-ports.ts";
import type { Tape } from "./tape.ts";
import { World } from "./world.ts";
import { type BodyRole, type Hooks, simWorkflows } from "./workloads.ts";

export interface ScenarioOptions {
  store: "memory" | "sqlite";
  /** `flow`: the flow-control story (flow-story.ts). Default `plain`. */
  story?: Story;
  /** Most items one story may run (a livelock is a finding). Default 40,000. */
  maxSteps?: number;
}

export interface ScenarioResult {
  violation: Violation | undefined;
  steps: number;
  /** Simulated time the story took, ms. */
  simulatedMs: number;
  summary: string;
  trace: string[];
}

const START = Date.UTC(2026, 11, 1);
const LEASE_MS = 30_000;
const VISIBILITY_MS = 60_000;
const WATCHDOG_MS = 5_000;
/** After the faults stop, every run must end within this much simulated time. */
const CALM_BOUND_MS = 6 * 3_600_000;
/** Chance that a store call fails or loses its answer, and that an event happens per step, by intensity. */
const OP_FAULT = [0, 0.01, 0.04, 0.1];
const EVENT = [0, 0.004, 0.012, 0.03];

interface Worker {
  id: string;
  owner: string;
  pool: WakePool;
  filling: boolean;
}

/** The story running now: a promise rejection nobody handles (a real process would crash on it) is its finding. */
let running: Ledger | undefined;
process.on("unhandledRejection", (reason) => {
  const err = reason as Error;
  if (running) running.fail("unhandled-rejection", `${err?.name}: ${err?.message} — a real process would crash (SIM_STACKS=1 shows where the call came from)\n${err?.stack ?? ""}`);
  else throw reason;
});

export async function runScenario(tape: Tape, options: ScenarioOptions): Promise<ScenarioResult> {
  const world = new World(tape, START);
  const ledger = new Ledger((line) => world.log(line));
  running = ledger;
  const maxSteps = options.maxSteps ?? 40_000;
  const { store: base, close } = openStore(options.store);
  const table = new SimWakeTable();

  // The story's shape, from the first draws (all zeros: one worker, one saga, no faults).
  // The flow story always has faults (at least the first intensity).
  const story = options.story ?? "plain";
  const pressure = flowPressure(story);
  const intensity = pressure ? 1 + tape.next(3) : tape.next(4);
  const faultSteps = intensity === 0 ? 0 : tape.between(50, 1_500);
  const plans = pressure ? planFlowRuns(tape, pressure) : planRuns(tape);
  world.log(`story: ${story === "plain" ? "" : `${story}, `}${options.store} store, intensity ${intensity}, ${faultSteps} fault steps, runs ${plans.map((p) => `${p.runId}=${p.workflow}`).join(" ")}`);

  let faultsOn = intensity > 0;
  const faults: FaultPicker = (actor, op, write, args): Fault => {
    if (!faultsOn || !tape.chance(faultChance(pressure, OP_FAULT[intensity] ?? 0, pressure !== undefined && isFlowCall(actor, op, args)))) return "none";
    if (!write) return "fail";
    return (["fail", "lost-throw", "lost-retry"] as const)[tape.next(3)] ?? "fail";
  };
  const created = new Set<string>();
  const observe = (actor: string, op: string, args: unknown[], answer: unknown, answered: boolean) => {
    const learnt = ledger.applied(actor, op, args, answer, answered, inExec.getStore());
    if (freeze && faultsOn && isFlowCall(actor, op, args)) freeze(actor, op, args);
    if (op === "createRun" && (answer as { created?: boolean }).created) created.add((args[0] as { runId: string }).runId);
    if (op === "finishRun" || op === "acquireLease" || op === "releaseLease" || op === "continueRun") {
      const runId = args[0] as string;
      void base.getRun(runId).then((run) => run && ledger.status(runId, run.status));
    }
    return learnt;
  };

  // Bodies: each waits for the world (an item, or a timer for a long one), and may fail transiently.
  const hooksFor = (worker: string): Hooks => ({
    body: (ctx: StepRunContext, role: BodyRole) => {
      // A dead process runs nothing (a frozen one's bodies were started before it froze).
      if (world.dead.has(worker)) return new Promise<string>(() => {});
      const cut = ctx.idempotencyKey.indexOf("/");
      const journalId = ctx.idempotencyKey.slice(0, cut);
      const stepId = ctx.idempotencyKey.slice(cut + 1);
      const start = ledger.bodyStart(worker, journalId, stepId, ctx.attempt, role);
      return new Promise<string>((resolve, reject) => {
        const finish = () => {
          ledger.bodyEnd(start);
          if (faultsOn && tape.chance(0.05)) reject(new Error("the provider hiccuped (simulated)"));
          else resolve(`${stepId}@${ctx.attempt}`);
        };
        const long = tape.next(8) === 7 ? tape.between(1, 200) * 1_000 : 0;
        if (long > 0) world.timer(worker, world.now + long, `body ${journalId}/${stepId} ends`, finish);
        else world.add(worker, `body ${journalId}/${stepId} ends`, finish);
      });
    },
    sawCancel: (runId) => ledger.sawCancel(worker, runId, inExec.getStore()),
  });

  const workers: Worker[] = [];
  let workerSeq = 0;
  const deadOwners = new Set<string>();
  const startWorker = (): Worker => {
    const id = `w${++workerSeq}`;
    const owner = `sim:${id}`;
    const wakes = actorWakes(world, id, table, faults);
    // Odd workers hand the starts they make due now (children, next incarnations) to their own
    // pool, as the local runtime does (no wake: a crash before the lease leaves a due run for
    // the watchdog); even ones send every wake through the table.
    let pool: WakePool | undefined;
    const engineWakes = workerSeq % 2 === 1 ? new InProcessStarts(wakes, () => (world.dead.has(id) ? undefined : pool)) : wakes;
    const engine = new SimEngine(
      { store: actorStore(world, id, base, faults, observe), wakes: engineWakes, clock: world.clock, timers: world.timersFor(id), workflows: createRegistry(simWorkflows(hooksFor(id))), owner, leaseTtlMs: LEASE_MS, maxInvocationMs: 120_000 },
      ledger,
      id,
    );
    const mayBreak = (lease: Lease) => [...deadOwners].some((dead) => lease.owner.startsWith(`${dead}:`));
    pool = new WakePool({
      engine,
      wakes,
      clock: world.clock,
      visibilityMs: VISIBILITY_MS,
      concurrency: 4,
      invoke: { mayBreak },
      onError: (runId, error) => world.log(`${id} invocation of ${runId} threw ${(error as Error)?.name}: ${(error as Error)?.message}`),
    });
    const worker: Worker = { id, owner, pool, filling: false };
    workers.push(worker);
    world.log(`${id} starts`);
    return worker;
  };
  const live = () => workers.filter((w) => !world.dead.has(w.id));
  const kill = (w: Worker) => {
    world.kill(w.id);
    deadOwners.add(w.owner);
    ledger.workerDied(w.id);
    world.log(`${w.id} SIGKILL`);
  };
  for (let i = tape.between(1, 3); i > 0; i--) startWorker();

  // The watchdog: overdue runs, and runs a dead worker holds, are woken (the local runtime's sweep).
  const dogStore = actorStore(world, "watchdog", base, faults, observe);
  const dogWakes = actorWakes(world, "watchdog", table, faults);
  const sweep = () => {
    world.timer("watchdog", world.now + WATCHDOG_MS, "watchdog sweep", sweep);
    void (async () => {
      for (const run of await dogStore.listDueRuns(world.now - 1_000, 100)) await dogWakes.schedule({ runId: run.runId, at: world.now, reason: "watchdog", key: "watchdog" });
      for (const run of (await dogStore.listRuns({ status: "running" })).runs) {
        if (run.lease && [...deadOwners].some((d) => run.lease?.owner.startsWith(`${d}:`))) await dogWakes.schedule({ runId: run.runId, at: world.now, reason: "watchdog", key: "recover" });
      }
    })().catch((err: unknown) => world.log(`watchdog: ${(err as Error)?.name}`));
  };
  world.timer("watchdog", world.now + WATCHDOG_MS, "watchdog sweep", sweep);

  // The client: starts the planned runs, then signals and cancels (retrying what fails transiently).
  const client = simClient(world, ledger, new Client({ store: actorStore(world, "client", base, faults, observe), wakes: actorWakes(world, "client", table, faults), clock: world.clock, workflows: createRegistry(simWorkflows(hooksFor("client"))) }), plans, START);
  const freeze =
    pressure &&
    flowFreezer(world, ledger, pressure, (runId) => {
      const plan = plans.find((p) => p.runId === runId);
      if (plan) client.cancel(plan);
    });
  const event = storyEvents({ world, ledger, table, plans, client, live, kill, startWorker });

  // Polling: a worker with room claims due wakes (WakePool.fill), one poll at a time.
  const poll = () => {
    const due = table.nextVisibleAt();
    if (due === undefined || due > world.now) return;
    for (const w of live()) {
      if (w.filling || world.frozen.has(w.id) || w.pool.size >= 4) continue;
      w.filling = true;
      world.add(w.id, "poll", () => {
        w.pool.fill().then(
          () => (w.filling = false),
          (err: unknown) => {
            w.filling = false;
            world.log(`${w.id} poll: ${(err as Error)?.name}`);
          },
        );
      });
    }
  };

  const allEnded = () => client.busy() === 0 && [...created].every((runId) => ledger.terminal.has(runId));
  let calmSince: number | undefined;
  const calm = () => {
    faultsOn = false;
    calmSince = world.now;
    for (const id of [...world.frozen]) {
      world.frozen.delete(id);
      world.log(`${id} SIGCONT (faults over)`);
    }
    if (live().length === 0) startWorker();
    world.log("faults stop");
  };
  if (!faultsOn) calm();

  let settledSteps = 0;
  let idleTurns = 0;
  await world.drain();
  while (!ledger.violation) {
    if (faultsOn && world.steps >= faultSteps) calm();
    if (faultsOn && tape.chance(EVENT[intensity] ?? 0)) event();
    poll();
    if (world.steps > maxSteps) {
      ledger.fail("livelock", `still running after ${maxSteps} steps`);
      break;
    }
    const ran = await world.step();
    if (allEnded() && client.busy() === 0) {
      // Let what the last invocations still do (free a slot, cancel a wake) finish, then stop:
      // one that waits on a timer (a slot's handover grace) has the clock moved to it.
      if (++settledSteps > 2_000) break;
      if (!ran && (ledger.openExecs === 0 || !world.advance())) break;
      continue;
    }
    if (ran) continue;
    if (calmSince !== undefined && world.now - calmSince > CALM_BOUND_MS) {
      const open: string[] = [];
      for (const runId of [...created].filter((id) => !ledger.terminal.has(id))) {
        const run = await base.getRun(runId);
        open.push(`${runId} (${run?.status}, waiting for ${run?.waitingFor ?? "-"}, due ${run?.wakeAt === undefined ? "never" : `t+${(run.wakeAt - START) / 1000}s`}, lease ${run?.lease ? `${run.lease.owner} until t+${(run.lease.expiresAt - START) / 1000}s` : "none"}, wakes ${table.size})`);
      }
      ledger.fail("not-finished", `${open.join(", ")} not ended ${CALM_BOUND_MS / 3_600_000} h after the faults stopped`);
      break;
    }
    // Idle: the clock moves to the next timer, or to a wake that becomes visible later.
    const visible = table.nextVisibleAt();
    if (!world.advance(visible !== undefined && visible > world.now ? visible : undefined)) {
      if (faultsOn) calm();
      else {
        ledger.fail("stuck", "nothing is pending, and runs have not ended");
        break;
      }
    }
    if (++idleTurns > 100_000) {
      ledger.fail("stuck", "the clock no longer moves, and runs have not ended");
      break;
    }
  }

  if (!ledger.violation) await finalChecks({ store: base, ledger, plans, started: client.started, storeKind: options.store, db: close.db, now: world.now + LEASE_MS, log: (line) => world.log(line) });
  close.close();
  const summary = plans.map((p) => `${p.runId}=${p.workflow}:${ledger.terminal.get(p.runId) ?? "open"}`).join(" ");
  return { violation: ledger.violation, steps: world.steps, simulatedMs: world.now - START, summary, trace: world.trace() };
}

function openStore(kind: "memory" | "sqlite"): { store: JournalStore; close: { close: () => void; db: ReturnType<typeof openLocalDatabase> | undefined } } {
  if (kind === "memory") return { store: new MemoryJournalStore(), close: { close: () => {}, db: undefined } };
  const db = openLocalDatabase(":memory:");
  return { store: new SqliteJournalStore(db), close: { close: () => db.close(), db } };
}

export { runOf };
export type { Exec };
