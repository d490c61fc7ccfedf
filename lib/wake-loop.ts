/**
 * Drains a pollable wake queue into the engine: the host loop of the local and test runtimes
 * (on AWS, the SQS event source mapping plays this part).
 *
 * Invocations run in a pool, not in batches: a slot is refilled as soon as its invocation ends,
 * so one slow or stuck run never holds back the others (it holds one slot until its deadline).
 */
import type { Engine, InvocationResult, InvokeOptions } from "./core/engine.ts";
import type { ClaimedWake, Clock, PollableWakeQueue } from "./ports.ts";

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
  /** Called whenever an invocation ends and its slot is free again. */
  onFree?: () => void;
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
      const batch = await this.o.wakes.claimDue(this.o.clock.now(), free, this.o.visibilityMs);
      if (batch.length === 0) return taken;
      taken += batch.length;
      for (const wake of batch) {
        // A run already executing here: this wake may be one that invocation sent for after
        // itself (its next incarnation, a signal that came meanwhile): run it when it ends.
        if (this.running.has(wake.runId)) {
          const earlier = this.deferred.get(wake.runId);
          this.deferred.set(wake.runId, wake);
          if (earlier) await this.o.wakes.ack(earlier);
        } else this.start(wake);
      }
    }
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

  private start(wake: ClaimedWake): void {
    const done = (async () => {
      try {
        const result = await this.o.engine.invoke(wake.runId, this.o.invoke);
        this.o.onResult?.(wake.runId, result);
        // "busy": the lease holder finishes the work, so the wake is done with either way.
        await this.o.wakes.ack(wake);
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
          if (!this.o.isDue || (await this.o.isDue(wake.runId).catch(() => true))) this.start(next);
          else await this.o.wakes.ack(next).catch(() => {});
        }
        this.o.onFree?.();
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
