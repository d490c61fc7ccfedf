/**
 * Replays recorded histories against today's workflow code without running any step body or
 * writing anything: the check to run before a deploy (`waymark check --histories dir/`), so a
 * change that would break runs in flight fails CI instead of production.
 */
import type { AnyWorkflow } from "../core/definition.ts";
import { serializeError } from "../core/error-codec.ts";
import { Execution } from "../core/execution.ts";
import { JournalView } from "../core/journal-view.ts";
import { createRegistry } from "../core/registry.ts";
import { type RunHistory, withoutMarks } from "../core/history.ts";
import type { SerializedError } from "../core/errors.ts";
import { validate } from "../core/validate.ts";
import { zodIssues } from "../core/zod-issues.ts";

/**
 * The outcome of replaying one history: the run, whether today's code tells the same story, else
 * the error, and how far it got.
 */
export interface HistoryReport {
  runId: string;
  workflow: string;
  description?: string;
  /** True when today's code replays the history to its end without a divergence. */
  ok: boolean;
  /**
   * Why not: `NonDeterminismError` with the step and both stories (`fields.stepId`,
   * `fields.expected` is what the journal recorded, `fields.found` what the code does now),
   * `UnknownWorkflowError` when no workflow given has the run's name and version, or
   * `JournalFormatError` / `InvalidInputError` when the history cannot be read by this code.
   */
  error?: SerializedError;
  /** Where the replay stopped: completed, failed (the recorded failure), or at the first step not in the history. */
  reached?: "completed" | "failed" | "suspended" | "continued" | "cancelled";
}

/** What `replayHistories` takes: today's workflows and the exported histories. */
export interface ReplayHistoriesOptions {
  workflows: readonly AnyWorkflow[];
  histories: readonly RunHistory[];
}

/**
 * Replays every history against `workflows`; one report per history, in order.
 *
 * @example
 * ```ts
 * import { readFileSync } from "node:fs";
 * import { replayHistories } from "waymark/testing";
 * const history = JSON.parse(readFileSync("histories/order-8472.json", "utf8"));
 * for (const report of await replayHistories({ workflows: [orderFlow], histories: [history] })) {
 *   if (!report.ok) throw new Error(`${report.runId}: ${report.error?.message}`);
 * }
 * ```
 */
export async function replayHistories(options: ReplayHistoriesOptions): Promise<HistoryReport[]> {
  const registry = createRegistry(options.workflows);
  const reports: HistoryReport[] = [];
  for (const history of options.histories) reports.push(await replayOne(registry, history));
  return reports;
}

async function replayOne(registry: ReturnType<typeof createRegistry>, history: RunHistory): Promise<HistoryReport> {
  const { run } = history;
  const base = { runId: run.runId, workflow: run.workflow, ...(history.description === undefined ? {} : { description: history.description }) };
  const workflow = registry.get(run.workflow);
  if (!workflow) return { ...base, ok: false, error: { name: "UnknownWorkflowError", message: `no workflow given is "${run.workflow}" (name and version)`, fields: { workflow: run.workflow } } };
  let view: JournalView;
  try {
    // Every record checked: a history's `checked` marks (if any) say nothing about this process.
    view = JournalView.parse(run.runId, withoutMarks(history.records));
  } catch (err) {
    return { ...base, ok: false, error: serializeError(err) };
  }
  const input = validate(workflow.input, run.input);
  if (!input.success) {
    const issues = zodIssues(input.error);
    return { ...base, ok: false, error: { name: "InvalidInputError", message: "the recorded input no longer fits the workflow's schema", fields: { issues } } };
  }
  const lastAt = history.records.reduce((max, r) => Math.max(max, Number((r.body as { at?: unknown } | null)?.at) || 0), run.updatedAt);
  const execution = new Execution({
    runId: run.runId,
    runCreatedAt: run.createdAt,
    workflow,
    input: input.data,
    journal: view,
    // Time stands still at the last record: sleeps recorded as passed stay passed.
    now: () => lastAt,
    append: async (record) => ({ record, won: true }),
    replayOnly: true,
  });
  const outcome = await execution.run();
  if (outcome.type === "failed" && outcome.nondeterminism) return { ...base, ok: false, error: outcome.error };
  if (outcome.type === "aborted") return { ...base, ok: false, error: serializeError(outcome.error) };
  return { ...base, ok: true, reached: outcome.type };
}
