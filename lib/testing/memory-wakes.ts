/**
 * The wake queue of the test runtime: the SQLite wake table's semantics (a claim hides a wake
 * for a while, a reschedule bumps its generation) on a map in memory.
 */
import type { ClaimedWake, PollableWakeQueue, Wake } from "../ports.ts";

interface Entry extends ClaimedWake {
  visibleAt: number;
}

/**
 * An in-memory {@link PollableWakeQueue}, one wake per run and key.
 *
 * @example
 * ```ts
 * const wakes = new MemoryWakeQueue();
 * await wakes.schedule({ runId: "order-1", at: Date.now(), reason: "start", key: "start" });
 * for (const wake of await wakes.claimDue(Date.now(), 10, 60_000)) {
 *   await engine.invoke(wake.runId);
 *   await wakes.ack(wake);
 * }
 * ```
 */
export class MemoryWakeQueue implements PollableWakeQueue {
  private readonly wakes = new Map<string, Entry>();
  /** One counter for the whole queue, so a wake cancelled and scheduled again never reuses a generation. */
  private generations = 0;

  async schedule(wake: Wake): Promise<void> {
    this.wakes.set(slot(wake.runId, wake.key), {
      runId: wake.runId,
      key: wake.key,
      at: wake.at,
      reason: wake.reason,
      visibleAt: wake.at,
      generation: ++this.generations,
    });
  }

  async cancel(runId: string, key: string): Promise<void> {
    this.wakes.delete(slot(runId, key));
  }

  async claimDue(now: number, limit: number, visibilityMs: number): Promise<ClaimedWake[]> {
    const due: Entry[] = [];
    for (const entry of this.wakes.values()) if (entry.visibleAt <= now) due.push(entry);
    due.sort((a, b) => a.visibleAt - b.visibleAt);
    return due.slice(0, Math.max(0, limit)).map((entry) => {
      entry.visibleAt = now + visibilityMs;
      return { runId: entry.runId, key: entry.key, at: entry.at, reason: entry.reason, generation: entry.generation };
    });
  }

  async ack(wake: ClaimedWake): Promise<void> {
    const id = slot(wake.runId, wake.key);
    if (this.wakes.get(id)?.generation === wake.generation) this.wakes.delete(id);
  }

  async nextDueAt(): Promise<number | undefined> {
    let next: number | undefined;
    for (const entry of this.wakes.values()) if (next === undefined || entry.visibleAt < next) next = entry.visibleAt;
    return next;
  }
}

/** Unambiguous for any run id: the length prefix says where the run id ends. */
function slot(runId: string, key: string): string {
  return `${runId.length}:${runId}:${key}`;
}
