/**
 * Flow control per key (`durable({ concurrency: { key, limit } })`): at most `limit` runs with
 * the same key execute at once, across processes and Lambda containers. A run takes a slot of
 * its scope (`<workflow>:<key>`) for the length of an invocation, renewed with its lease, so a
 * crashed holder's slot comes free when the lease would have; a run that finds every slot held,
 * or runs queued ahead of it, queues (ordered by when it was created) and waits, status
 * `queued`. Whoever frees a slot hands it to the first run of the queue and wakes it: first in,
 * first out. The slots and the queue are store operations in the one contract suite; the rules
 * that take and hand on slots are the run protocol's (lib/core/run/flow.ts).
 *
 * Rate limits per key reuse the slots: a start takes a slot that expires one period later, so at
 * most `limit` slots are live in any window of that length (a sliding window).
 */
import type { RunMeta } from "../ports.ts";
import type { Duration } from "./duration.ts";

export interface ConcurrencyOptions<I> {
  /** The key runs share a limit by (a customer id, a tenant). Method syntax: any workflow fits `AnyWorkflow`. */
  key(input: I): string;
  /** Most runs of one key executing at once. */
  limit: number;
}

/** A queued run is also due this long after it queued: the backstop if its wake is lost. */
export const QUEUED_RECHECK_MS = 30_000;

/**
 * A slot handed to the first queued run is kept for it this long: the time its wake has to
 * arrive. Past it the slot is free again (the run, due by then, looks again when it comes).
 */
export const HANDOFF_MS = 30_000;

/**
 * What a run waits for while it waits in the queue of `scope` (its `waitingFor`, status
 * `queued`, or `suspended` as an earlier version left it): a store puts a run in that queue only
 * while it is so (FlowStore.enqueue).
 */
export function waitingInQueue(scope: string): string {
  return `queued:${scope}`;
}

/** The scope of a run's slots. */
export function flowScope(workflowKey: string, key: string): string {
  return `${workflowKey}:${key}`;
}

/**
 * A run waiting in a queue of slots: `queued`, or (a journal of an earlier version)
 * `suspended` waiting for `queued:<scope>`.
 */
export function waitsForSlot(run: RunMeta | undefined): boolean {
  return (run?.status === "queued" || run?.status === "suspended") && run.waitingFor?.startsWith("queued:") === true;
}

export interface RateLimitOptions<I> {
  /** The key starts are counted by. */
  key(input: I): string;
  /** Most runs of one key that start within any `period`. */
  limit: number;
  period: Duration;
  /**
   * `delay` (default): a run over the rate waits, status `queued` (`waitingFor:
   * rate-limited:<scope>`), and starts when the window lets it. `reject`: `client.start` refuses
   * it with `RateLimitedError`, and no run is created.
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
