/**
 * How long one incarnation's journal may grow. Every invocation reads the whole journal, so a run
 * that loops for ever must end each batch of work with `step.continueAsNew(input)`; these limits
 * make a run that does not say so (a warning) and then stop it, clearly, before it gets slow.
 */
import { WaymarkError } from "./errors.ts";
import { jsonBytes } from "./json.ts";

/**
 * When a run's journal is large enough to warn about (`warn*`) and to fail the run with
 * `JournalLimitError` (`max*`): records and bytes. `journalLimits` on every runtime.
 */
export interface JournalLimits {
  warnRecords: number;
  warnBytes: number;
  maxRecords: number;
  maxBytes: number;
}

/**
 * The journal limits runtimes use unless given others: a `journal-large` warning past 5,000
 * records or 4 MiB, `JournalLimitError` past 50,000 records or 32 MiB.
 */
export const DEFAULT_JOURNAL_LIMITS: JournalLimits = {
  warnRecords: 5_000,
  warnBytes: 4 * 1024 * 1024,
  maxRecords: 50_000,
  maxBytes: 32 * 1024 * 1024,
};

/**
 * A run's journal passed the hard limit (`EngineOptions.journalLimits`). Not retryable: the code
 * must end batches of work with `step.continueAsNew(input)`.
 *
 * @example
 * ```ts
 * // in the workflow: every 1,000 items, start afresh with where it got to
 * if (processed === 1_000) return step.continueAsNew({ cursor });
 * ```
 */
export class JournalLimitError extends WaymarkError {
  override readonly name = "JournalLimitError" as const;
  readonly retryable = false;
  constructor(
    readonly runId: string,
    readonly records: number,
    readonly bytes: number,
    readonly limits: JournalLimits,
  ) {
    super(
      `run "${runId}": its journal has ${records} records (${bytes} bytes), past the limit of ${limits.maxRecords} records or ${limits.maxBytes} bytes; ` +
        "end each batch of work with step.continueAsNew(input) to start the run afresh with a new journal",
    );
  }
}

/**
 * The journal of one invocation against the limits: past the hard limit, the error that fails
 * the run; past a warning threshold, a `journal-large` log line. `knownBytes` is the journal's
 * size when its store knows it for free (SQLite); else a journal is measured once it is past a
 * tenth of the record warning, as its JSON.
 */
export function checkJournalLimits(
  limits: JournalLimits,
  runId: string,
  records: readonly unknown[],
  log: ((entry: { event: string; runId: string } & Record<string, unknown>) => void) | undefined,
  knownBytes?: number,
): JournalLimitError | undefined {
  const bytes = knownBytes ?? (records.length > limits.warnRecords / 10 ? jsonBytes(records) : 0); // small journals: not worth measuring
  if (records.length > limits.maxRecords || bytes > limits.maxBytes) return new JournalLimitError(runId, records.length, bytes, limits);
  if (records.length > limits.warnRecords || bytes > limits.warnBytes) {
    log?.({ event: "journal-large", runId, records: records.length, bytes, level: "warn", hint: "end each batch of work with step.continueAsNew(input)" });
  }
  return undefined;
}
