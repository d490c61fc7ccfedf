/**
 * The client's checks on values and records: the history as a reader sees it (records this code
 * cannot read shown, not hidden), whether a stored value is a given one (for idempotent retries),
 * and the journal's size limit on inputs and payloads.
 */
import { InvalidInputError } from "./core/errors.ts";
import { canonicalJson, jsonBytes } from "./core/json.ts";
import { type JournalRecord, parseRecord } from "./core/records.ts";
import { loadRef, metaRef, type Payloads, sha256Hex } from "./core/payloads.ts";
import type { Journal, PayloadRef, RunMeta } from "./ports.ts";

/** One record of a run's history, in write order. */
export interface HistoryEntry {
  key: string;
  at: number;
  record?: JournalRecord;
  lateFor?: string;
  /** Why this code cannot read the record (another code version). */
  unreadable?: string;
}

/** A loaded journal's records as history entries, by record time (then key). */
export function historyOf(runId: string, journal: Journal): { run: RunMeta; entries: HistoryEntry[] } {
  const entries: HistoryEntry[] = journal.records.map((r) => {
    const at = typeof (r.body as { at?: unknown })?.at === "number" ? (r.body as { at: number }).at : 0;
    try {
      const record = parseRecord(runId, r.key, r.body);
      return { key: r.key, at, record, ...(r.lateFor === undefined ? {} : { lateFor: r.lateFor }) };
    } catch (err) {
      return { key: r.key, at, unreadable: (err as Error).message };
    }
  });
  entries.sort((a, b) => a.at - b.at || (a.key < b.key ? -1 : 1));
  return { run: journal.run, entries };
}

/**
 * Whether a stored value (inline, a meta reference, or a record's `payloadRef` when `isRef`) is
 * `value`: by hash first, then by reading it back (the same value with its keys in another order).
 */
export async function sameStoredValue(payloads: Payloads | undefined, stored: unknown, value: unknown, isRef = false): Promise<boolean> {
  const ref = isRef ? (stored as PayloadRef) : metaRef(stored);
  if (!ref) return canonicalJson(stored) === canonicalJson(value);
  const text = JSON.stringify(value);
  if (text !== undefined && (await sha256Hex(new TextEncoder().encode(text))) === ref.sha256) return true;
  return canonicalJson(await loadRef(payloads, ref)) === canonicalJson(value);
}

/** Refuses a value the journal could not hold, before anything is written. */
export function refuseTooLarge(value: unknown, path: "input" | "payload", limit: number): void {
  const size = jsonBytes(value);
  if (size > limit) throw new InvalidInputError(`${path} too large`, [{ path, message: `${size} bytes as JSON, over the journal's limit of ${limit}; pass a reference (an S3 key) instead` }]);
}
