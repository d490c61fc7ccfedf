/** How runs and records look as rows of the SQLite file (schema: database.ts), and back. */
import type { SerializedError } from "../core/errors.ts";
import { type RunMeta, type RunStatus, type StoredRecord, TERMINAL_STATUSES } from "../ports.ts";
import type { RecordCells } from "./journal-rows.ts";

/** The statuses a run ends in, as an SQL list: `status IN ${ENDED_STATUSES}`. */
export const ENDED_STATUSES = `(${[...TERMINAL_STATUSES].map((st) => `'${st}'`).join(", ")})`;

export interface RunRow {
  run_id: string;
  workflow: string;
  input: string | null;
  status: string;
  created_at: number;
  updated_at: number;
  wake_at: number | null;
  waiting_for: string | null;
  lease_token: number;
  lease_owner: string | null;
  lease_expires_at: number | null;
  invocations: number;
  incarnation: number;
  due_on_release: number | null;
  /** 1: created by a parent's start (RunMeta.child); NULL otherwise. */
  child: number | null;
  result: string | null;
  error: string | null;
  finished_at: number | null;
}

export interface RecordRow {
  key: string;
  body: string;
  late_for: string | null;
}

export function toMeta(row: RunRow): RunMeta {
  const meta: RunMeta = {
    runId: row.run_id,
    workflow: row.workflow,
    input: fromJson(row.input),
    status: row.status as RunStatus,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    leaseToken: row.lease_token,
    invocations: row.invocations,
  };
  if (row.wake_at !== null) meta.wakeAt = row.wake_at;
  if (row.waiting_for !== null) meta.waitingFor = row.waiting_for;
  if (row.lease_owner !== null && row.lease_expires_at !== null) {
    meta.lease = { owner: row.lease_owner, token: row.lease_token, expiresAt: row.lease_expires_at };
  }
  if (row.result !== null) meta.result = fromJson(row.result);
  if (row.error !== null) meta.error = fromJson(row.error) as SerializedError;
  if (row.finished_at !== null) meta.finishedAt = row.finished_at;
  if (row.incarnation > 1) meta.incarnation = row.incarnation;
  if (row.due_on_release !== null) meta.dueOnRelease = row.due_on_release;
  if (row.child === 1) meta.child = true;
  return meta;
}

export function toRecord(row: RecordRow): StoredRecord {
  const record: StoredRecord = { key: row.key, body: JSON.parse(row.body) };
  if (row.late_for !== null) record.lateFor = row.late_for;
  return record;
}

/**
 * A row's body as an object. An engine's own row (`checked`) whose body is flat — every field a
 * string, number, boolean or null, as a step's record with a plain result is — is parsed once and
 * the frozen object shared by every later load: nothing can change it, so no load can see
 * another's changes. Any other body is parsed for each load (user code may change the objects in it).
 */
function bodyOf(row: RecordCells): unknown {
  const cached = row[5];
  if (cached) return cached;
  const body: unknown = JSON.parse(row[1]);
  if (row[4] && cached === undefined) row[5] = isFlat(body) ? Object.freeze(body) : false;
  return body;
}

function isFlat(body: unknown): body is object {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return false;
  for (const k in body) {
    const v = (body as Record<string, unknown>)[k];
    if (typeof v === "object" && v !== null) return false;
  }
  return true;
}

/**
 * Record rows as arrays (key, body, late_for, bytes of key and body), and their total size. A
 * row whose size is not yet counted (-1: kept from an append, journal-rows.ts) is counted here, once.
 */
export function toRecords(rows: readonly RecordCells[]): { records: StoredRecord[]; bytes: number } {
  let bytes = 0;
  const records = new Array<StoredRecord>(rows.length);
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i]!;
    const [key, body, lateFor] = row;
    const record: StoredRecord = { key, body: bodyOf(row) };
    if (lateFor !== null) record.lateFor = lateFor;
    if (row[4]) record.checked = true;
    records[i] = record;
    let size = row[3];
    if (size < 0) row[3] = size = Buffer.byteLength(key) + Buffer.byteLength(body);
    bytes += size;
  }
  return { records, bytes };
}

/** `undefined` (no value) is stored as SQL NULL, so it stays distinct from JSON `null`. */
export function toJson(value: unknown): string | null {
  return JSON.stringify(value) ?? null;
}

export function fromJson(text: string | null): unknown {
  return text === null ? undefined : JSON.parse(text);
}
