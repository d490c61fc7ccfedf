/** Logs, metrics and traces, shared by the runtimes (none of it is in the core). */
export { createJsonLogger, type JsonLoggerOptions, type Logger, type LoggerLambdaContext, type LogLevel } from "./logger.ts";
export { levelOf, logEntriesTo, type LeveledEntry } from "./entries.ts";
export { DIMENSION, emfWriter, invocationMetrics, METRIC, METRICS_NAMESPACE, type EmfOptions } from "./metrics.ts";
export { createTracing, loadOpenTelemetry, parseTraceparent, traceWakes, type Tracing } from "./tracing.ts";
