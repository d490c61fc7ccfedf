/**
 * One simulated story, decided by its tape: which runs start, how many workers (each the real
 * engine in the real local host loop, `WakePool`) share one store (memory or a SQLite file in
 * memory), and what goes wrong while faults are on — crashes and restarts, frozen workers that
 * come back, clock jumps, duplicated and dropped wakes, store calls that fail or lose their
 * answers, signals and cancels from the client. Then the faults stop, and every run must end
 * within a bounded simulated time (liveness); final-checks.ts reads the end state.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { Client } from "../../lib/client.ts";
import type { StepRunContext } from "../../lib/core/definition.ts";
import { Engine, type EngineOptions, type InvocationResult, type InvokeOptions } from "../../lib/core/engine.ts";
import { createRegistry } from "../../lib/core/registry.ts";
import type { JournalStore, Lease } from "../../lib/ports.ts";
import { MemoryJournalStore } from "../../lib/testing/memory-store.ts";
import { openLocalDatabase } from "../../lib/local/database.ts";
import { SqliteJournalStore } from "../../lib/local/sqlite-store.ts";
import { InProcessStarts, WakePool } from "../../lib/wake-loop.ts";
import { Ledger, runOf, type Exec, type Violation } from "./ledger.ts";
import { actorStore, actorWakes, type Fault, type FaultPicker, SimWakeTable, TransientStoreError } from "./sim-ports.ts";
import type { Tape } from "./tape.ts";
import { World } from "./world.ts";
import { type BodyRole, type Hooks, simWorkflows } from "./workloads.ts";
import { finalChecks, type PlannedRun } from "./final-checks.ts";

export interface ScenarioOptions {
  store: "memory" | "sqlite";
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

/**
 * The ledger's execution that engine code runs for (set around each invocation, carried by its
 * promises): the store calls and caught cancellations of an invocation that has ended, yet whose
 * step body still runs and is recorded afterwards, are told apart from those of the next
 * invocation of the same run in the same worker.
 */
const inExec = new AsyncLocalStorage<Exec>();

class SimEngine extends Engine {
  constructor(
    options: EngineOptions,
    private readonly ledger: Ledger,
    private readonly worker: string,
  ) {
    super(options);
  }

  override async invoke(runId: string, options?: InvokeOptions): Promise<InvocationResult> {
    const exec = this.ledger.beginExec(this.worker, runId);
    return inExec.run(exec, async () => {
      try {
        const result = await super.invoke(runId, options);
        this.ledger.endExec(exec, result.status);
        return result;
      } catch (err) {
        this.ledger.endExec(exec, `threw ${(err as Error)?.name}`);
        throw err;
      }
    });
  }
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
  const intensity = tape.next(4);
  const faultSteps = intensity === 0 ? 0 : tape.between(50, 1_500);
  const plans = planRuns(tape);
  world.log(`story: ${options.store} store, intensity ${intensity}, ${faultSteps} fault steps, runs ${plans.map((p) => `${p.runId}=${p.workflow}`).join(" ")}`);

  let faultsOn = intensity > 0;
  const faults: FaultPicker = (_actor, _op, write): Fault => {
    if (!faultsOn || !tape.chance(OP_FAULT[intensity] ?? 0)) return "none";
    if (!write) return "fail";
    return (["fail", "lost-throw", "lost-retry"] as const)[tape.next(3)] ?? "fail";
  };
  const created = new Set<string>();
  const observe = (actor: string, op: string, args: unknown[], answer: unknown, answered: boolean) => {
    const learnt = ledger.applied(actor, op, args, answer, answered, inExec.getStore());
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
  const client = new Client({ store: actorStore(world, "client", base, faults, observe), wakes: actorWakes(world, "client", table, faults), clock: world.clock, workflows: createRegistry(simWorkflows(hooksFor("client"))) });
  let clientBusy = 0;
  const clientTask = (label: string, task: () => Promise<void>, attempt = 1) => {
    clientBusy++;
    world.add("client", label, () => {
      task().then(
        () => clientBusy--,
        (err: unknown) => {
          clientBusy--;
          if (err instanceof TransientStoreError && attempt < 30) {
            clientBusy++;
            world.timer("client", world.now + 1_000, `${label} (retry ${attempt + 1})`, () => {
              clientBusy--;
              clientTask(label, task, attempt + 1);
            });
          } else world.log(`client ${label}: ${(err as Error)?.name}: ${(err as Error)?.message}`);
        },
      );
    });
  };
  const started = new Set<string>();
  for (const plan of plans) {
    clientTask(`start ${plan.runId}`, async () => {
      await client.start(plan.workflow, { runId: plan.runId, input: plan.input });
      started.add(plan.runId);
    });
    for (const [i, at] of plan.signalsAt.entries()) {
      world.timer("client", START + at, `signal ${plan.runId}#${i}`, () => signal(plan, i));
    }
    if (plan.cancelAt !== undefined) world.timer("client", START + plan.cancelAt, `cancel ${plan.runId}`, () => cancel(plan));
  }
  function signal(plan: PlannedRun, i: number): void {
    const signalId = `sig-${plan.runId}-${i}`;
    const [name, payload] = plan.workflow === "sim-inbox" ? ["msg", { n: i }] : ["approve", { ok: i % 3 !== 2 }];
    clientTask(`signal ${plan.runId} ${signalId}`, async () => {
      try {
        const receipt = await client.signal(plan.runId, name, payload, { signalId });
        ledger.signals.push({ runId: plan.runId, signalId, status: receipt.status });
        world.log(`client signal ${signalId}: ${receipt.status}`);
      } catch (err) {
        if (err instanceof TransientStoreError) throw err;
        world.log(`client signal ${signalId} refused: ${(err as Error)?.name}`);
      }
    });
  }
  let extraSignals = 0;
  function cancel(plan: PlannedRun): void {
    clientTask(`cancel ${plan.runId}`, async () => {
      const answer: unknown = await client.cancel(plan.runId, { reason: "simulated cancel" }).catch((err: unknown) => {
        if (err instanceof TransientStoreError) throw err;
        return `refused: ${(err as Error)?.name}`;
      });
      ledger.cancels.push({ runId: plan.runId, answer });
      if ((answer as { outcome?: unknown }).outcome === "cancelled") ledger.cancelAnswered(plan.runId);
      world.log(`client cancel ${plan.runId}: ${JSON.stringify(answer)}`);
    });
  }

  const event = () => {
    const kind = tape.next(8);
    const pick = <T>(list: T[]): T | undefined => list[tape.next(list.length)];
    switch (kind) {
      case 0: {
        const w = pick(live());
        if (w) kill(w);
        if (live().length === 0) startWorker();
        break;
      }
      case 1:
        if (live().length < 3) startWorker();
        break;
      case 2: {
        const w = pick(live().filter((x) => !world.frozen.has(x.id)));
        if (w && live().length > 1) {
          world.frozen.add(w.id);
          ledger.interruptWorker(w.id);
          world.log(`${w.id} SIGSTOP`);
        }
        break;
      }
      case 3: {
        const w = pick(live().filter((x) => world.frozen.has(x.id)));
        if (w) {
          world.frozen.delete(w.id);
          world.log(`${w.id} SIGCONT`);
        }
        break;
      }
      case 4: {
        const ms = tape.between(1, 90) * 1_000;
        if (ms >= 10_000) ledger.pauseAll();
        world.jump(ms);
        world.log(`clock jumps ${ms} ms`);
        break;
      }
      case 5: {
        const what = table.duplicate(tape.next(16), world.now);
        if (what) world.log(`wake ${what} delivered again`);
        break;
      }
      case 6: {
        const what = table.drop(tape.next(16));
        if (what) world.log(`wake ${what} lost`);
        break;
      }
      default: {
        const plan = pick(plans);
        if (!plan) break;
        if (tape.next(2) === 0 && (plan.workflow === "sim-inbox" || plan.workflow === "sim-saga")) signal(plan, plan.signalsAt.length + extraSignals++);
        else cancel(plan);
      }
    }
  };

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

  const allEnded = () => clientBusy === 0 && [...created].every((runId) => ledger.terminal.has(runId));
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
    if (allEnded() && clientBusy === 0) {
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

  if (!ledger.violation) await finalChecks({ store: base, ledger, plans, started, storeKind: options.store, db: close.db, now: world.now + LEASE_MS, log: (line) => world.log(line) });
  close.close();
  const summary = plans.map((p) => `${p.runId}=${p.workflow}:${ledger.terminal.get(p.runId) ?? "open"}`).join(" ");
  return { violation: ledger.violation, steps: world.steps, simulatedMs: world.now - START, summary, trace: world.trace() };
}

function openStore(kind: "memory" | "sqlite"): { store: JournalStore; close: { close: () => void; db: ReturnType<typeof openLocalDatabase> | undefined } } {
  if (kind === "memory") return { store: new MemoryJournalStore(), close: { close: () => {}, db: undefined } };
  const db = openLocalDatabase(":memory:");
  return { store: new SqliteJournalStore(db), close: { close: () => db.close(), db } };
}

/** One to four runs of the workloads, each with when the client signals it. */
function planRuns(tape: Tape): PlannedRun[] {
  const count = tape.between(1, 4);
  const plans: PlannedRun[] = [];
  for (let i = 0; i < count; i++) {
    const runId = `r${i}`;
    const kind = tape.next(7);
    const signalsAt: number[] = [];
    const at = () => tape.between(0, 600) * 1_000;
    switch (kind) {
      case 0: {
        const wait = tape.next(2) === 1;
        if (wait) signalsAt.push(at());
        plans.push({ runId, workflow: "sim-saga", input: { legs: tape.between(1, 3), parallel: tape.next(2) === 1, sleepMs: tape.next(3) * 5_000, wait }, signalsAt });
        break;
      }
      case 1: {
        const total = tape.between(1, 5);
        for (let s = 0; s < total; s++) signalsAt.push(at());
        plans.push({ runId, workflow: "sim-inbox", input: { seen: 0, total }, signalsAt });
        break;
      }
      case 2:
        plans.push({ runId, workflow: "sim-fanout", input: { items: tape.between(1, 6), concurrency: tape.between(1, 3) }, signalsAt });
        break;
      case 3:
        plans.push({ runId, workflow: "sim-parent", input: { childSteps: tape.between(1, 3) }, signalsAt });
        break;
      case 4:
      case 5:
        plans.push({ runId, workflow: "sim-limited", input: { key: `k${tape.next(2)}` }, signalsAt });
        break;
      default:
        plans.push({ runId, workflow: "sim-once", input: {}, signalsAt });
    }
    // A third of the runs are cancelled: often at once, as they start, sometimes later.
    const plan = plans.at(-1);
    if (plan && tape.next(3) === 2) plan.cancelAt = tape.next(2) === 0 ? 0 : tape.between(0, 300) * 1_000;
  }
  return plans;
}

export { runOf };
export type { Exec };
