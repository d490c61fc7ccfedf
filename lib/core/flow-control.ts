/**
 * Flow control per key (`durable({ concurrency: { key, limit } })`): at most `limit` runs with
 * the same key execute at once, across processes and Lambda containers. A run takes a slot of
 * its scope (`<workflow>:<key>`) for the length of an invocation, renewed with its lease, so a
 * crashed holder's slot comes free when the lease would have; a run that finds every slot held
 * queues (ordered by when it was created) and waits. Whoever frees a slot wakes the first run of
 * the queue. The slots and the queue are store operations in the one contract suite.
 *
 * Rate limits per key reuse the slots: a start takes a slot that expires one period later, so at
 * most `limit` slots are live in any window of that length (a sliding window).
 */
import type { Clock, JournalStore, WakeQueue } from "../ports.ts";
import type { Duration } from "./duration.ts";

export interface ConcurrencyOptions<I> {
  /** The key runs share a limit by (a customer id, a tenant). Method syntax: any workflow fits `AnyWorkflow`. */
  key(input: I): string;
  /** Most runs of one key executing at once. */
  limit: number;
}

/** A queued run is also due this long after it queued: the backstop if its wake is lost. */
export const QUEUED_RECHECK_MS = 30_000;

export interface FlowPorts {
  store: JournalStore;
  wakes: WakeQueue;
  clock: Clock;
}

/** The scope of a run's slots. */
export function flowScope(workflowKey: string, key: string): string {
  return `${workflowKey}:${key}`;
}

/**
 * Takes a slot, or queues the run. Trying again after queueing closes the race with a holder
 * that freed its slot (and found the queue empty) between the first try and the queueing.
 */
export async function enter(o: FlowPorts, scope: string, limit: number, runId: string, queuedAt: number, expiresAt: number): Promise<boolean> {
  if (await o.store.takeSlot(scope, limit, { runId, expiresAt }, o.clock.now())) return true;
  await o.store.enqueue(scope, runId, queuedAt);
  return o.store.takeSlot(scope, limit, { runId, expiresAt }, o.clock.now());
}

/**
 * Frees the run's slot and wakes the first queued run that still waits. A run in the queue may no
 * longer wait for a slot (it took one on its second try, or has ended): it is passed over, so
 * the wake goes to a run that needs it. One that is in the middle of queueing itself looks again
 * after it has released its lease (admission.ts).
 */
export async function leave(o: FlowPorts, scope: string, runId: string): Promise<void> {
  await o.store.freeSlot(scope, runId);
  for (;;) {
    const next = await o.store.dequeue(scope);
    if (next === undefined) return;
    const run = await o.store.getRun(next);
    if (run?.status !== "suspended" || !run.waitingFor?.startsWith("queued:")) continue;
    const now = o.clock.now();
    await o.store.markDue(next, now);
    await o.wakes.schedule({ runId: next, at: now, reason: "start", key: "slot" });
    return;
  }
}

export interface RateLimitOptions<I> {
  /** The key starts are counted by. */
  key(input: I): string;
  /** Most runs of one key that start within any `period`. */
  limit: number;
  period: Duration;
  /**
   * `delay` (default): a run over the rate waits (`waitingFor: rate-limited:<scope>`) and starts
   * when the window lets it. `reject`: `client.start` refuses it with `RateLimitedError`, and no
   * run is created.
   */
  onLimit?: "delay" | "reject";
}

/** The scope of a run's rate window: its slots expire a period after they were taken. */
export function rateScope(workflowKey: string, key: string): string {
  return `rate:${workflowKey}:${key}`;
}

export interface DebounceOptions<I> {
  /** The key starts are debounced by. */
  key(input: I): string;
  /** A run waits this long after its start; a later start of its key within it supersedes it. */
  period: Duration;
}

/** The scope of a key's latest start. */
export function debounceScope(workflowKey: string, key: string): string {
  return `debounce:${workflowKey}:${key}`;
}
