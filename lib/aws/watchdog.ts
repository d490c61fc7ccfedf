/**
 * The watchdog: a scheduled sweep that wakes every run whose due time passed without progress
 * (a lost wake, a Lambda that died holding the lease). A run is never stuck silently.
 */
import type { AwsRuntime } from "./runtime.ts";

export interface SweepResult {
  woken: string[];
}

/**
 * Wakes overdue runs. `graceMs` leaves room for wakes that are merely in flight (the Scheduler
 * fires within a minute; SQS delivery takes a moment).
 */
export async function sweepOverdueRuns(rt: AwsRuntime, options: { graceMs?: number; limit?: number } = {}): Promise<SweepResult> {
  const now = rt.clock.now();
  const overdue = await rt.store.listDueRuns(now - (options.graceMs ?? 120_000), options.limit ?? 500);
  const woken: string[] = [];
  for (const run of overdue) {
    await rt.wakes.schedule({ runId: run.runId, at: now, reason: "watchdog", key: "watchdog" });
    woken.push(run.runId);
    rt.log({ level: "warn", event: "watchdog", runId: run.runId, status: run.status, overdueMs: now - (run.wakeAt ?? now) });
  }
  return { woken };
}
