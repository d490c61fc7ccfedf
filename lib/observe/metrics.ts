/**
 * CloudWatch metrics in Embedded Metric Format: one JSON line per invocation, which CloudWatch
 * Logs turns into metrics (no API call, no extra latency). The `_aws` envelope names the
 * namespace, the dimension sets and each metric's unit; the values sit at the root beside the
 * dimensions and a few searchable properties (`runId`, `outcome`).
 */
import type { LogEntry } from "../core/engine.ts";

/** The namespace Waymark's metrics are published in (the construct's alarm reads it). */
export const METRICS_NAMESPACE = "Waymark";

/** Metric names, for dashboards and alarms. */
export const METRIC = {
  stepsExecuted: "StepsExecuted",
  stepsReplayed: "StepsReplayed",
  retries: "StepRetries",
  suspensions: "Suspensions",
  /** Invocations the run has used, as a percentage of its budget (`maxInvocationsPerRun`). */
  budgetUsed: "InvocationBudgetUsed",
  /** From the run's creation to its end; emitted when it completes or fails. */
  runDuration: "RunDuration",
  /** 1 when a run failed because it ran out of invocations (`InvocationBudgetError`). */
  outOfBudget: "RunsOutOfBudget",
} as const;

/** Dimension names: every metric is published per function, and per function and workflow. */
export const DIMENSION = { functionName: "FunctionName", workflow: "Workflow" } as const;

/**
 * Options of the CloudWatch Embedded Metric Format writer: the namespace, the `FunctionName`
 * dimension, where lines go, and the clock.
 */
export interface EmfOptions {
  namespace?: string;
  /** The `FunctionName` dimension. Default: `AWS_LAMBDA_FUNCTION_NAME`, else `local`. */
  functionName?: string;
  /** Where each line goes. Default: stdout. */
  write?: (line: string) => void;
  now?: () => number;
}

/**
 * The EMF document for one `invocation` entry, or undefined for other entries (and for
 * invocations that did no work: `busy`, `missing`, `finished`).
 *
 * @example
 * ```ts
 * const doc = invocationMetrics({ event: "invocation", runId: "r", workflow: "order-flow", outcome: "suspended", executed: 2, replayed: 1, retries: 0, invocations: 1, maxInvocations: 10_000 });
 * console.log(JSON.stringify(doc)); // CloudWatch Logs extracts StepsExecuted = 2, Suspensions = 1, …
 * ```
 */
export function invocationMetrics(entry: LogEntry, options: EmfOptions = {}): Record<string, unknown> | undefined {
  if (entry.event !== "invocation" || typeof entry.workflow !== "string") return undefined;
  const num = (v: unknown) => (typeof v === "number" && Number.isFinite(v) ? v : 0);
  const values: Array<[string, "Count" | "Percent" | "Milliseconds", number]> = [
    [METRIC.stepsExecuted, "Count", num(entry.executed)],
    [METRIC.stepsReplayed, "Count", num(entry.replayed)],
    [METRIC.retries, "Count", num(entry.retries)],
    [METRIC.suspensions, "Count", entry.outcome === "suspended" ? 1 : 0],
    [METRIC.budgetUsed, "Percent", num(entry.maxInvocations) > 0 ? (100 * num(entry.invocations)) / num(entry.maxInvocations) : 0],
    [METRIC.outOfBudget, "Count", entry.errorName === "InvocationBudgetError" ? 1 : 0],
  ];
  if (typeof entry.runDurationMs === "number") values.push([METRIC.runDuration, "Milliseconds", entry.runDurationMs]);
  const functionName = options.functionName ?? process.env.AWS_LAMBDA_FUNCTION_NAME ?? "local";
  return {
    _aws: {
      Timestamp: (options.now ?? Date.now)(),
      CloudWatchMetrics: [
        {
          Namespace: options.namespace ?? METRICS_NAMESPACE,
          Dimensions: [[DIMENSION.functionName], [DIMENSION.functionName, DIMENSION.workflow]],
          Metrics: values.map(([Name, Unit]) => ({ Name, Unit })),
        },
      ],
    },
    [DIMENSION.functionName]: functionName,
    [DIMENSION.workflow]: entry.workflow,
    ...Object.fromEntries(values.map(([name, , value]) => [name, value])),
    runId: entry.runId,
    outcome: entry.outcome,
  };
}

/**
 * Writes one EMF line per invocation entry; other entries are ignored.
 *
 * @example
 * ```ts
 * const engine = new Engine({ ...ports, log: emfWriter({ namespace: "Orders" }) });
 * ```
 */
export function emfWriter(options: EmfOptions = {}): (entry: LogEntry) => void {
  const write = options.write ?? ((line: string) => void process.stdout.write(`${line}\n`));
  return (entry) => {
    const doc = invocationMetrics(entry, options);
    if (doc) write(JSON.stringify(doc));
  };
}
