/**
 * The watchdog: a scheduled sweep that wakes every run whose due time passed without progress
 * (a lost wake, a Lambda that died holding the lease). A run is never stuck silently.
 */
import type { RunMeta } from "../ports.ts";
import type { AwsRuntimeConfig } from "./config.ts";
import type { AwsRuntime } from "./runtime.ts";

/** What a watchdog sweep did: the runs it woke. */
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
  const hosted = new Set([...rt.workflows.values()].map((w) => w.name));
  for (const run of overdue) {
    if (!sweepsRun(rt.config, hosted, run, now)) continue;
    await rt.wakes.schedule({ runId: run.runId, at: now, reason: "watchdog", key: "watchdog" });
    woken.push(run.runId);
    rt.log({ level: "warn", event: "watchdog", runId: run.runId, status: run.status, overdueMs: now - (run.wakeAt ?? now) });
  }
  return { woken };
}

/**
 * Whether this function's sweep wakes an overdue run. Alone on its table, it wakes every one
 * (a run of a workflow it does not host then waits as `unhosted`, and says so). Sharing the table
 * with other functions, each with its own wake queue, it wakes the runs of workflows it hosts
 * (any version): a wake sent here for another function's run would only push that run back. The
 * engine's first function also takes runs that stay overdue past `watchdogOrphansAfterMs` (no
 * member's sweep took them: nobody hosts their workflow), so they are reported, not silent.
 *
 * @example
 * ```ts
 * sweepsRun({ ...config, watchdogHostedOnly: true }, new Set(["order-flow"]), run, Date.now()); // run.workflow "order-flow@v2": true
 * ```
 */
export function sweepsRun(config: Pick<AwsRuntimeConfig, "watchdogHostedOnly" | "watchdogOrphansAfterMs">, hostedNames: ReadonlySet<string>, run: Pick<RunMeta, "workflow" | "wakeAt">, now: number): boolean {
  if (!config.watchdogHostedOnly) return true;
  // A run records its workflow's key: the name, or `name@v<n>` for a later version.
  if (hostedNames.has(run.workflow.replace(/@v\d+$/, ""))) return true;
  return config.watchdogOrphansAfterMs !== undefined && now - (run.wakeAt ?? now) >= config.watchdogOrphansAfterMs;
}
