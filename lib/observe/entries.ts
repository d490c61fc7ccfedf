/**
 * The engine's and the runtimes' structured entries, written through a {@link Logger}: each
 * entry becomes one line with a short stable `message` (`step completed`, `wake suspended`) and
 * its fields as extra keys (`event`, `runId`, `stepId`, `attempt`, `outcome`, …).
 */
import type { LogEntry } from "../core/engine.ts";
import { type Logger, type LogLevel, RESERVED_KEYS } from "./logger.ts";

/** A structured entry with its level, as the runtimes emit them. */
export type LeveledEntry = LogEntry & { level?: LogLevel };

/** The level of an entry that did not say: trouble is `warn`, the rest `info`. */
export function levelOf(entry: LeveledEntry): LogLevel {
  if (entry.level === "info" || entry.level === "warn" || entry.level === "error") return entry.level;
  if (entry.event === "abandoned" || entry.event === "unhosted" || entry.event === "watchdog") return "warn";
  if (entry.event === "invocation-error") return "error";
  const outcome = entry.outcome;
  return outcome === "failed" || outcome === "retrying" || outcome === "abandoned" || outcome === "unhosted" ? "warn" : "info";
}

/**
 * Writes entries to a logger.
 *
 * @example
 * ```ts
 * const write = logEntriesTo(new Logger({ serviceName: "orders" })); // Powertools
 * write({ event: "step", runId: "order-1", stepId: "charge", attempt: 1, outcome: "completed" });
 * ```
 */
export function logEntriesTo(logger: Logger): (entry: LeveledEntry) => void {
  return (entry) => {
    const level = levelOf(entry);
    const { message, level: _level, ...fields } = entry;
    const text = entry.event === "log" && typeof message === "string" ? message : [entry.event, typeof entry.outcome === "string" ? entry.outcome : undefined].filter(Boolean).join(" ");
    // Powertools drops (and warns about) extra keys that clash with its own.
    const extra = Object.fromEntries(Object.entries(fields).filter(([k]) => !RESERVED_KEYS.has(k)));
    logger[level](text, extra);
  };
}
