/**
 * Flow control per key (`durable({ concurrency: { key, limit } })`): at most `limit` runs with
 * the same key execute at once, across processes and Lambda containers. A run takes a slot of
 * its scope (`<workflow>:<key>`) for the length of an invocation, renewed with its lease, so a
 * crashed holder's slot comes free when the lease would have; a run that finds every slot held,
 * or runs queued ahead of it, queues (ordered by when it was created) and waits, status
 * `queued`. Whoever frees a slot hands it to the first run of the queue and wakes it: first in,
 * first out. The slots and the queue are store operations in the one contract suite.
 *
 * Rate limits per key reuse the slots: a start takes a slot that expires one period later, so at
 * most `limit` slots are live in any window of that length (a sliding window).
 */
import { type Clock, type JournalStore, type QueuedRun, type RunMeta, TERMINAL_STATUSES, type WakeQueue } from "../ports.ts";
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

/** Most runs one pass over a queue looks at (passing over runs that no longer wait). */
const MAX_PASS = 100;

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
 * A run waiting in a queue of slots: `queued`, or (a journal of an earlier version)
 * `suspended` waiting for `queued:<scope>`.
 */
export function waitsForSlot(run: RunMeta | undefined): boolean {
  return (run?.status === "queued" || run?.status === "suspended") && run.waitingFor?.startsWith("queued:") === true;
}

/**
 * Takes a slot, first in, first out: a slot handed to this run while it waited (or taken by it
 * already: a retry) is kept; a free one is taken only if no run waits ahead of it in the queue.
 * False: the run must queue (admission.ts), behind the runs that wait already. `run.at` is where
 * the run stands in the queue (when it was created).
 */
export async function enter(o: FlowPorts, scope: string, limit: number, run: QueuedRun, expiresAt: number): Promise<boolean> {
  const { store, clock } = o;
  const { runId } = run;
  const head = await store.peek(scope);
  if (head !== undefined && head.runId !== runId) {
    // Runs wait ahead of it: only a slot handed to it (or held already: a retry) is kept —
    // `limit` 0 keeps and takes none. Its queue entry goes (the promoter that handed the slot
    // took it off, unless it died first).
    if (!(await store.takeSlot(scope, 0, { runId, expiresAt }, clock.now()))) return false;
    await store.dequeue(scope, run);
    return true;
  }
  // First in line, or nobody waits: a slot it holds is kept, else a free one taken.
  if (!(await store.takeSlot(scope, limit, { runId, expiresAt }, clock.now()))) return false;
  if (head !== undefined) {
    // Out of the queue, and a slot still free goes to the next in line (a promoter that found
    // this run at the head, running, left it to this run).
    await store.dequeue(scope, head);
    await promote(o, scope, limit);
  }
  return true;
}

/**
 * Hands free slots of `scope` to the runs at the head of its queue, in order: each is given a
 * slot (kept for it {@link HANDOFF_MS}), taken off the queue, marked due and woken. A run at the
 * head that has ended is taken off and passed over. Stops at the first run no free slot is left
 * for, and at a head that is not waiting: it holds the lease (taking a slot, or about to queue
 * again), and looks at the queue itself once it has its slot or waits. Taking such a run off
 * here could lose it: its own enqueue, just before, found its old entry and added nothing.
 * Safe to repeat and to run concurrently: the slots decide, and a run handed a slot twice holds one.
 */
export async function promote(o: FlowPorts, scope: string, limit: number): Promise<void> {
  const { store, clock } = o;
  for (let pass = 0; pass < MAX_PASS; pass++) {
    const head = await store.peek(scope);
    if (head === undefined) return;
    const run = await store.getRun(head.runId);
    if (run === undefined || TERMINAL_STATUSES.has(run.status)) {
      await store.dequeue(scope, head);
      continue;
    }
    if (!waitsForSlot(run)) return;
    const now = clock.now();
    if (!(await store.takeSlot(scope, limit, { runId: head.runId, expiresAt: now + HANDOFF_MS }, now))) return;
    await store.dequeue(scope, head);
    await store.markDue(head.runId, now);
    await o.wakes.schedule({ runId: head.runId, at: now, reason: "start", key: "slot" });
  }
}

/** Frees the run's slot and hands it on to the first queued run that still waits. */
export async function leave(o: FlowPorts, slot: { scope: string; limit: number }, runId: string): Promise<void> {
  await o.store.freeSlot(slot.scope, runId);
  await promote(o, slot.scope, slot.limit);
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
