/**
 * Drains a pollable wake queue into the engine: the host loop of the local and test runtimes
 * (on AWS, the SQS event source mapping plays this part).
 *
 * Invocations run in a pool, not in batches: a slot is refilled as soon as its invocation ends,
 * so one slow or stuck run never holds back the others (it holds one slot until its deadline).
 */
import type { Engine, InvocationResult, InvokeOptions } from "./core/engine.ts";
import type { ClaimedWake, Clock, PollableWakeQueue, Wake, WakeQueue } from "./ports.ts";

export interface DrainOptions {
  engine: Engine;
  wakes: PollableWakeQueue;
  clock: Clock;
  /** How long a claimed wake stays hidden; if the host dies it reappears after this. */
  visibilityMs: number;
  /** Most invocations at once. */
  concurrency: number;
  invoke?: InvokeOptions;
  onResult?: (runId: string, result: InvocationResult) => void;
  onError?: (runId: string, error: unknown) => void;
  /** Called whenever an invocation of `runId` has ended and its wake is done with (acked if it came from the queue). */
  onFree?: (runId: string) => void;
  /**
   * Whether a run still needs an invocation (its wake time has come). A wake that arrived while
   * the run was executing here is run afterwards only if so; without this, always.
   */
  isDue?: (runId: string) => Promise<boolean>;
}

/**
 * A bounded pool of invocations fed from a pollable wake queue. A wake is acked when its
 * invocation returns; one that throws stays claimed and reappears after the visibility timeout,
 * as an SQS message would.
 */
export class WakePool {
  private readonly running = new Map<string, Promise<void>>();
  /** A wake that came for a run already executing here: it runs when that invocation ends. */
  private readonly deferred = new Map<string, ClaimedWake>();
  private failure: { error: unknown } | undefined;
  /** Slots a claim in progress may fill (an offer must leave them free). */
  private claiming = 0;

  constructor(private readonly o: DrainOptions) {}

  /** Invocations in progress. */
  get size(): number {
    return this.running.size;
  }

  /** Claims due wakes into the free slots and starts their invocations; returns how many wakes it took. */
  async fill(): Promise<number> {
    let taken = 0;
    for (;;) {
      const free = this.o.concurrency - this.running.size;
      if (free <= 0) return taken;
      this.claiming = free;
      let batch: ClaimedWake[];
      try {
        batch = await this.o.wakes.claimDue(this.o.clock.now(), free, this.o.visibilityMs);
      } finally {
        this.claiming = 0;
      }
      if (batch.length === 0) return taken;
      taken += batch.length;
      for (const wake of batch) {
        // A run already executing here: this wake may be one that invocation sent for after
        // itself (its next incarnation, a signal that came meanwhile): run it when it ends.
        if (this.running.has(wake.runId)) {
          const earlier = this.deferred.get(wake.runId);
          this.deferred.set(wake.runId, wake);
          if (earlier) await this.o.wakes.ack(earlier);
        } else this.start(wake, wake);
      }
    }
  }

  /**
   * Starts an invocation for a wake due now without it going through the queue (nothing to
   * schedule, claim or ack), when a slot is free and the run is not executing here; returns
   * false otherwise, and the caller schedules the wake. Only for a wake whose run is marked due in
   * the journal (its `wakeAt`), so that a crash before the invocation takes the lease leaves a due
   * run that the failover's scan for stranded runs wakes, as a lost wake would be.
   */
  offer(wake: Wake): boolean {
    if (wake.at > this.o.clock.now() || this.running.size + this.claiming >= this.o.concurrency) return false;
    if (this.running.has(wake.runId) || this.deferred.has(wake.runId)) return false;
    this.start(wake, undefined);
    return true;
  }

  /** Resolves when any invocation in progress ends (at once if none is running). */
  async next(): Promise<void> {
    if (this.running.size > 0) await Promise.race(this.running.values());
    this.rethrow();
  }

  /** Resolves when every invocation in progress has ended. */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.race(this.running.values());
    this.rethrow();
  }

  /** Invokes the run of `wake`; `claimed` (the queue's wake, if it came from the queue) is acked after. */
  private start(wake: Wake, claimed: ClaimedWake | undefined): void {
    const done = (async () => {
      try {
        const result = await this.o.engine.invoke(wake.runId, this.o.invoke);
        this.o.onResult?.(wake.runId, result);
        // "busy": the lease holder finishes the work, so the wake is done with either way.
        if (claimed) await this.o.wakes.ack(claimed);
      } catch (err) {
        try {
          this.o.onError?.(wake.runId, err);
        } catch (thrown) {
          this.failure ??= { error: thrown };
        }
      } finally {
        this.running.delete(wake.runId);
        const next = this.deferred.get(wake.runId);
        if (next) {
          this.deferred.delete(wake.runId);
          // A duplicate of the wake just handled is done with; one the invocation sent for after
          // itself (a next incarnation, a signal that came meanwhile) finds the run due.
          if (!this.o.isDue || (await this.o.isDue(wake.runId).catch(() => true))) this.start(next, next);
          else await this.o.wakes.ack(next).catch(() => {});
        }
        this.o.onFree?.(wake.runId);
      }
    })();
    this.running.set(wake.runId, done);
  }

  private rethrow(): void {
    const failure = this.failure;
    this.failure = undefined;
    if (failure) throw failure.error;
  }
}

/**
 * A wake queue that hands a run's start due now (key `"start"`: a new run, a child, a next
 * incarnation — each marked due in the journal first) to a pool of this process with a free
 * slot, and schedules every other wake on `queue`. A start delivered in-process costs no wake
 * row (its schedule, claim and ack: three writes); if the process dies before the invocation
 * takes the run's lease, the run is due with no wake and no lease, which the failover finds
 * (a peer's death, the next start-up, the scan tick).
 *
 * @example
 * ```ts
 * let pool: WakePool | undefined;
 * const wakes = new InProcessStarts(table, () => pool);
 * const engine = new Engine({ store, wakes, clock: systemClock, workflows, owner: "local:1" });
 * pool = new WakePool({ engine, wakes: table, clock: systemClock, visibilityMs: 20_000, concurrency: 8 });
 * ```
 */
export class InProcessStarts implements WakeQueue {
  constructor(
    private readonly queue: WakeQueue,
    private readonly pool: () => WakePool | undefined,
  ) {}

  async schedule(wake: Wake): Promise<void> {
    if (wake.key === "start" && wake.reason === "start" && this.pool()?.offer(wake)) return;
    await this.queue.schedule(wake);
  }

  cancel(runId: string, key: string): Promise<void> {
    return this.queue.cancel(runId, key);
  }
}

/**
 * Runs every due wake, and the wakes those invocations make due now, until none are due and none
 * is running (the test runtime's `settle`). Returns the number of wakes taken.
 */
export async function drainDueWakes(o: DrainOptions): Promise<number> {
  const pool = new WakePool(o);
  let handled = 0;
  for (;;) {
    const taken = await pool.fill();
    handled += taken;
    if (pool.size === 0 && taken === 0) {
      await pool.idle(); // surfaces an error an invocation's onError threw
      return handled;
    }
    await pool.next();
  }
}
