/**
 * A run's history as a file: its meta record and every stored record, as `waymark history export`
 * writes it and `replayHistories` / `waymark check` read it. Plain JSON, so histories recorded in
 * production can be kept in a repository and replayed in CI before every deploy.
 */
import type { RunMeta, StoredRecord } from "../ports.ts";
import { InvalidInputError } from "./errors.ts";

/** The format tag of exported histories. */
export const HISTORY_FORMAT = "waymark.history/1";

/**
 * An exported history of a run (`waymark history export`): its meta and journal, to replay against
 * new code.
 */
export interface RunHistory {
  format?: typeof HISTORY_FORMAT;
  /** What the history shows, for reports (e.g. "order-flow waiting for approval"). */
  description?: string;
  run: RunMeta;
  records: StoredRecord[];
}

/** Builds a history file's content. */
export function toHistory(run: RunMeta, records: StoredRecord[], description?: string): RunHistory {
  return { format: HISTORY_FORMAT, ...(description === undefined ? {} : { description }), run, records: withoutMarks(records) };
}

/** Records without their `checked` marks: a mark says what this process wrote, and a history leaves the process. */
export function withoutMarks(records: readonly StoredRecord[]): StoredRecord[] {
  return records.map((r) => (r.lateFor === undefined ? { key: r.key, body: r.body } : { key: r.key, body: r.body, lateFor: r.lateFor }));
}

/** Checks the shape of a parsed history file; throws {@link InvalidInputError} naming what is wrong. */
export function parseHistory(value: unknown, source: string): RunHistory {
  const h = value as Partial<RunHistory> | null;
  const problems: Array<{ path: string; message: string }> = [];
  if (typeof h !== "object" || h === null) problems.push({ path: "(root)", message: "not an object" });
  else {
    if (h.format !== undefined && h.format !== HISTORY_FORMAT) problems.push({ path: "format", message: `expected ${HISTORY_FORMAT}` });
    if (typeof h.run !== "object" || h.run === null || typeof h.run.runId !== "string" || typeof h.run.workflow !== "string") problems.push({ path: "run", message: "needs runId and workflow" });
    if (!Array.isArray(h.records) || h.records.some((r) => typeof r?.key !== "string")) problems.push({ path: "records", message: "must be a list of { key, body }" });
  }
  if (problems.length > 0) throw new InvalidInputError(`${source}: not a Waymark history`, problems);
  return h as RunHistory;
}
