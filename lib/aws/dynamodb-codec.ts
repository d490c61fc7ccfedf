/**
 * How runs and records look as DynamoDB items (layout: `table-definition.ts`). Plain
 * `AttributeValue`s, no marshalling library: every attribute is named and typed here.
 *
 * JSON values (input, result, error, record bodies) are stored as JSON strings, so any JSON
 * round-trips exactly: a DynamoDB map refuses numbers past its range (1e300 is JSON, not a
 * DynamoDB number) and would cost a conversion per attribute. `undefined` is an absent
 * attribute, distinct from JSON `null`.
 */
import type { AttributeValue } from "@aws-sdk/client-dynamodb";
import type { SerializedError } from "../core/errors.ts";
import { TERMINAL_STATUSES, type RunMeta, type RunStatus, type StoredRecord } from "../ports.ts";
import { INDEX_SHARDS } from "./table-definition.ts";
import { hash32 } from "../core/random.ts";

export type Item = Record<string, AttributeValue>;

export const META_SK = "meta";

/** Meta item attribute names (also the names used in expressions, all plain identifiers). */
export const ATTR = {
  runId: "runId",
  workflow: "workflow",
  input: "input",
  status: "status",
  createdAt: "createdAt",
  updatedAt: "updatedAt",
  wakeAt: "wakeAt",
  waitingFor: "waitingFor",
  leaseOwner: "leaseOwner",
  leaseExpiresAt: "leaseExpiresAt",
  leaseToken: "leaseToken",
  invocations: "invocations",
  incarnation: "incarnation",
  dueOnRelease: "dueOnRelease",
  result: "result",
  error: "error",
  finishedAt: "finishedAt",
  body: "body",
  lateFor: "lateFor",
  writtenAt: "writtenAt",
  /** On a meta item: the run was created with an empty journal, and no writer outside a lease has written to it since (`markJournaled`). */
  emptyJournal: "emptyJournal",
  /** On a meta item: created by a parent's start (`RunMeta.child`). */
  child: "child",
} as const;

export const pkOf = (runId: string): string => `run#${runId}`;

export const s = (value: string): AttributeValue => ({ S: value });
export const n = (value: number): AttributeValue => ({ N: String(value) });

/** Numbers as fixed-width text so that string order is numeric order (epoch ms fit in 15 digits). */
export function pad(value: number): string {
  if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`cannot index ${value}: expected a non-negative integer epoch ms`);
  return String(value).padStart(15, "0");
}

/** The run's index shard: a stable hash of its id (FNV-1a). */
export function shardOf(runId: string): number {
  return hash32(runId) % INDEX_SHARDS;
}

export const statusPartition = (status: RunStatus, shard: number): string => `status#${status}#${shard}`;
export const wakePartition = (shard: number): string => `wake#${shard}`;
export const indexSortKey = (time: number, runId: string): string => `${pad(time)}#${runId}`;

/** The `byWake` index keys of a run in this state, or undefined when it must leave the index. */
export function wakeIndexKeys(runId: string, status: RunStatus, wakeAt: number | undefined): Item | undefined {
  if (wakeAt === undefined || TERMINAL_STATUSES.has(status)) return undefined;
  return { gsi2pk: s(wakePartition(shardOf(runId))), gsi2sk: s(indexSortKey(wakeAt, runId)) };
}

/** The meta item of a new run. */
export function newMetaItem(meta: RunMeta): Item {
  const item: Item = {
    pk: s(pkOf(meta.runId)),
    sk: s(META_SK),
    [ATTR.runId]: s(meta.runId),
    [ATTR.workflow]: s(meta.workflow),
    [ATTR.status]: s(meta.status),
    [ATTR.createdAt]: n(meta.createdAt),
    [ATTR.updatedAt]: n(meta.updatedAt),
    [ATTR.leaseToken]: n(meta.leaseToken),
    [ATTR.invocations]: n(meta.invocations),
    gsi1pk: s(statusPartition(meta.status, shardOf(meta.runId))),
    gsi1sk: s(indexSortKey(meta.createdAt, meta.runId)),
    ...wakeIndexKeys(meta.runId, meta.status, meta.wakeAt),
  };
  const input = toJson(meta.input);
  if (input !== undefined) item[ATTR.input] = s(input);
  if (meta.wakeAt !== undefined) item[ATTR.wakeAt] = n(meta.wakeAt);
  if (meta.child) item[ATTR.child] = { BOOL: true };
  return item;
}

/** Reads a meta item back; throws on an item that is not one (a corrupted table). */
export function decodeMeta(item: Item): RunMeta {
  const meta: RunMeta = {
    runId: str(item, ATTR.runId),
    workflow: str(item, ATTR.workflow),
    input: fromJson(item[ATTR.input]?.S),
    status: str(item, ATTR.status) as RunStatus,
    createdAt: num(item, ATTR.createdAt),
    updatedAt: num(item, ATTR.updatedAt),
    leaseToken: num(item, ATTR.leaseToken),
    invocations: num(item, ATTR.invocations),
  };
  const wakeAt = optNum(item, ATTR.wakeAt);
  if (wakeAt !== undefined) meta.wakeAt = wakeAt;
  const waitingFor = item[ATTR.waitingFor]?.S;
  if (waitingFor !== undefined) meta.waitingFor = waitingFor;
  const owner = item[ATTR.leaseOwner]?.S;
  const expiresAt = optNum(item, ATTR.leaseExpiresAt);
  if (owner !== undefined && expiresAt !== undefined) meta.lease = { owner, token: meta.leaseToken, expiresAt };
  if (item[ATTR.result]?.S !== undefined) meta.result = fromJson(item[ATTR.result]?.S);
  if (item[ATTR.error]?.S !== undefined) meta.error = fromJson(item[ATTR.error]?.S) as SerializedError;
  const finishedAt = optNum(item, ATTR.finishedAt);
  if (finishedAt !== undefined) meta.finishedAt = finishedAt;
  const incarnation = optNum(item, ATTR.incarnation);
  if (incarnation !== undefined && incarnation > 1) meta.incarnation = incarnation;
  const dueOnRelease = optNum(item, ATTR.dueOnRelease);
  if (dueOnRelease !== undefined) meta.dueOnRelease = dueOnRelease;
  if (item[ATTR.child]?.BOOL === true) meta.child = true;
  return meta;
}

/** A record's item; `writtenAt` (epoch microseconds) orders the journal's timeline. */
export function recordItem(runId: string, record: StoredRecord, writtenAt: number): Item {
  const item: Item = {
    pk: s(pkOf(runId)),
    sk: s(record.key),
    [ATTR.body]: s(toJson(record.body) ?? "null"),
    [ATTR.writtenAt]: n(writtenAt),
  };
  if (record.lateFor !== undefined) item[ATTR.lateFor] = s(record.lateFor);
  return item;
}

export function decodeRecord(item: Item): StoredRecord {
  const record: StoredRecord = { key: str(item, "sk"), body: JSON.parse(str(item, ATTR.body)) as unknown };
  const lateFor = item[ATTR.lateFor]?.S;
  if (lateFor !== undefined) record.lateFor = lateFor;
  return record;
}

let lastStamp = 0;

/**
 * Write order for the timeline: epoch microseconds, strictly increasing within this process.
 * Across processes (two Lambdas racing on one run) it is as good as their clocks.
 */
export function writeStamp(): number {
  const us = Date.now() * 1000;
  lastStamp = us > lastStamp ? us : lastStamp + 1;
  return lastStamp;
}

/** `undefined` stays absent (distinct from JSON `null`). */
export function toJson(value: unknown): string | undefined {
  return JSON.stringify(value) ?? undefined;
}

function fromJson(text: string | undefined): unknown {
  return text === undefined ? undefined : (JSON.parse(text) as unknown);
}

function str(item: Item, name: string): string {
  const v = item[name]?.S;
  if (v === undefined) throw new TypeError(`journal item ${item.pk?.S}/${item.sk?.S} lacks string attribute "${name}"`);
  return v;
}

function num(item: Item, name: string): number {
  const v = optNum(item, name);
  if (v === undefined) throw new TypeError(`journal item ${item.pk?.S}/${item.sk?.S} lacks number attribute "${name}"`);
  return v;
}

function optNum(item: Item, name: string): number | undefined {
  const v = item[name]?.N;
  return v === undefined ? undefined : Number(v);
}

/**
 * An item's size as DynamoDB bills and limits it: UTF-8 length of each attribute name plus its
 * value (strings: UTF-8 bytes; numbers: about one byte per two digits plus one, rounded up here).
 */
export function itemSize(item: Item): number {
  let size = 0;
  for (const [name, value] of Object.entries(item)) {
    size += Buffer.byteLength(name, "utf8");
    if (value.S !== undefined) size += Buffer.byteLength(value.S, "utf8");
    else if (value.N !== undefined) size += Math.ceil(value.N.replace(/[-.]/g, "").length / 2) + 1;
    else if (value.BOOL !== undefined || value.NULL !== undefined) size += 1;
  }
  return size;
}
