/**
 * The logger port: what Waymark writes its lines to. A Powertools for AWS Lambda `Logger` fits
 * it as it is, and so does any object with `info`, `warn` and `error` taking a message and an
 * object of extra keys (pino's argument order differs: wrap it). Without one, Waymark writes
 * lines in Powertools Logger's own shape ({@link createJsonLogger}).
 */

/** The fields of the Lambda context a logger reads (those Powertools puts on every line). */
export interface LoggerLambdaContext {
  functionName?: string;
  memoryLimitInMB?: string | number;
  invokedFunctionArn?: string;
  awsRequestId?: string;
}

/** Where Waymark's lines go: a Powertools `Logger`, or any object with these methods. */
export interface Logger {
  info(message: string, ...attributes: Array<Record<string, unknown>>): void;
  warn(message: string, ...attributes: Array<Record<string, unknown>>): void;
  error(message: string, ...attributes: Array<Record<string, unknown>>): void;
  /** Called with each invocation's Lambda context (Powertools' `addContext`), when present. */
  addContext?(context: LoggerLambdaContext): void;
}

/** The levels Waymark logs at. */
export type LogLevel = "info" | "warn" | "error";

/** Options of `createJsonLogger`: the `service` key, where lines go, the lowest level written, and the environment read. */
export interface JsonLoggerOptions {
  /** The `service` key. Default: `POWERTOOLS_SERVICE_NAME`, else `service_undefined` (as Powertools). */
  service?: string;
  /** Where each line goes. Default: stdout, one JSON object per line. */
  write?: (line: string) => void;
  /** Lines below this level are dropped. Default: `POWERTOOLS_LOG_LEVEL` / `LOG_LEVEL`, else `info`. */
  level?: LogLevel;
  env?: Readonly<Record<string, string | undefined>>;
}

const RANK: Record<LogLevel, number> = { info: 1, warn: 2, error: 3 };
/** Keys Powertools owns on a line: extra attributes never overwrite them. */
export const RESERVED_KEYS = new Set(["level", "message", "timestamp", "service", "sampling_rate", "cold_start", "function_arn", "function_memory_size", "function_name", "function_request_id", "xray_trace_id"]);

/**
 * A logger whose lines have Powertools Logger's standard keys (`level`, `message`,
 * `timestamp`, `service`, `cold_start`, `function_name`, `function_memory_size`,
 * `function_arn`, `function_request_id`, `sampling_rate`, `xray_trace_id`) and the extra keys
 * flat beside them, so CloudWatch Logs Insights queries written for Powertools work unchanged.
 *
 * @example
 * ```ts
 * const logger = createJsonLogger({ service: "orders" });
 * logger.info("charged", { runId: "order-8472", stepId: "charge" });
 * // {"level":"INFO","message":"charged","timestamp":"…","service":"orders",…,"runId":"order-8472","stepId":"charge"}
 * ```
 */
export function createJsonLogger(options: JsonLoggerOptions = {}): Logger {
  const env = options.env ?? process.env;
  const service = options.service ?? env.POWERTOOLS_SERVICE_NAME ?? "service_undefined";
  const write = options.write ?? ((line: string) => void process.stdout.write(`${line}\n`));
  const threshold = RANK[options.level ?? levelFrom(env.POWERTOOLS_LOG_LEVEL ?? env.LOG_LEVEL)];
  const samplingRate = Number(env.POWERTOOLS_LOGGER_SAMPLE_RATE ?? 0) || 0;
  let lambda: LoggerLambdaContext | undefined;
  let coldStart = true;
  let contexts = 0;
  const line = (level: LogLevel) => (message: string, ...attributes: Array<Record<string, unknown>>) => {
    if (RANK[level] < threshold) return;
    const extra = Object.fromEntries(attributes.flatMap((a) => Object.entries(a)).filter(([k]) => !RESERVED_KEYS.has(k)));
    const trace = /Root=([^;]+)/.exec(env._X_AMZN_TRACE_ID ?? "")?.[1];
    const base: Record<string, unknown> = {
      level: level.toUpperCase(),
      message,
      timestamp: new Date().toISOString(),
      service,
      cold_start: lambda ? coldStart : undefined,
      function_arn: lambda?.invokedFunctionArn,
      function_memory_size: lambda?.memoryLimitInMB === undefined ? undefined : String(lambda.memoryLimitInMB),
      function_name: lambda?.functionName,
      function_request_id: lambda?.awsRequestId,
      sampling_rate: samplingRate,
      xray_trace_id: trace,
    };
    write(JSON.stringify({ ...base, ...extra }, (_k, v: unknown) => (v instanceof Error ? { name: v.name, message: v.message, stack: v.stack } : v)));
  };
  return {
    info: line("info"),
    warn: line("warn"),
    error: line("error"),
    addContext(context) {
      lambda = context;
      coldStart = ++contexts === 1;
    },
  };
}

function levelFrom(raw: string | undefined): LogLevel {
  const l = raw?.toLowerCase();
  return l === "warn" || l === "error" ? l : "info";
}
