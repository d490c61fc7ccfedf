/**
 * What each lease and lifecycle transition writes to a run's meta item, and the condition it
 * needs: one `UpdateItem` each. Kept apart from the store, which only sends them and reads the
 * answer, so the rules read in one place (they mirror the SQLite store's `UPDATE … WHERE`).
 */
import { earliest } from "../core/journal-base.ts";
import type { AcquireRequest, ContinueUpdate, FinishUpdate, SuspendUpdate } from "../ports.ts";
import { ATTR, n, s, shardOf, statusPartition, toJson, wakeIndexKeys } from "./dynamodb-codec.ts";
import { UpdateBuilder } from "./dynamodb-update.ts";
import { TTL_ATTRIBUTE } from "./table-definition.ts";

export interface MetaUpdate {
  update: UpdateBuilder;
  condition: string;
}

/** Grant: the run exists, is not finished, its lease is free, expired, or `ifToken`'s, and (with `dueBy`) it is not suspended until later. */
export function acquireUpdate(runId: string, req: AcquireRequest): MetaUpdate {
  const expiresAt = req.now + req.ttlMs;
  const u = new UpdateBuilder()
    .set(ATTR.leaseOwner, s(req.owner))
    .set(ATTR.leaseExpiresAt, n(expiresAt))
    .increment(ATTR.leaseToken)
    .increment(ATTR.invocations)
    .set(ATTR.status, s("running"))
    .set(ATTR.wakeAt, n(expiresAt))
    .set(ATTR.updatedAt, n(req.now))
    .setAll({ gsi1pk: s(statusPartition("running", shardOf(runId))), ...wakeIndexKeys(runId, "running", expiresAt) })
    .remove(ATTR.dueOnRelease);
  // A lease holds only while expiresAt > now.
  const free = [`attribute_not_exists(${u.name(ATTR.leaseOwner)})`, `${u.name(ATTR.leaseExpiresAt)} <= ${u.value("c_now", n(req.now))}`];
  if (req.ifToken !== undefined) free.push(`${u.name(ATTR.leaseToken)} = ${u.value("c_ifToken", n(req.ifToken))}`);
  // Asked for a wake's time: a suspended run only if due by then (a missing wakeAt compares false).
  const due = req.dueBy === undefined ? "" : ` AND (${u.name(ATTR.status)} <> ${u.value("c_suspended", s("suspended"))} OR ${u.name(ATTR.wakeAt)} <= ${u.value("c_dueBy", n(req.dueBy))})`;
  return { update: u, condition: `attribute_exists(pk) AND ${u.notFinished()} AND (${free.join(" OR ")})${due}` };
}

/**
 * Renew: moves the lease expiry, which is also the running run's wake time (for the watchdog) —
 * later, never earlier: a renewal delayed in transit finds a later expiry and changes nothing
 * (the store answers it as renewed: the lease is still this token's, and longer).
 */
export function renewUpdate(runId: string, token: number, now: number, ttlMs: number): MetaUpdate {
  const expiresAt = now + ttlMs;
  const u = new UpdateBuilder()
    .set(ATTR.leaseExpiresAt, n(expiresAt))
    .set(ATTR.wakeAt, n(expiresAt))
    .setAll(wakeIndexKeys(runId, "running", expiresAt) ?? {});
  return { update: u, condition: `${leaseHeld(u, token)} AND ${u.name(ATTR.leaseExpiresAt)} <= ${u.value("c_expiresAt", n(expiresAt))}` };
}

/**
 * Release: suspended (or queued) until `wakeAt` (in the due index) or, without one, until a signal.
 * A run marked `dueOnRelease` (a signal came while the lease was held) is refused here, and
 * released again by the store with `seenDue`: the earlier of the two wake times, the mark removed
 * if it is still the one seen (an UpdateItem cannot take a minimum of an attribute and a value).
 */
export function releaseUpdate(runId: string, token: number, update: SuspendUpdate, seenDue?: number): MetaUpdate {
  const status = update.status ?? "suspended";
  const wakeAt = earliest(update.wakeAt, seenDue);
  const u = new UpdateBuilder()
    .set(ATTR.status, s(status))
    .set(ATTR.updatedAt, n(update.now))
    .set("gsi1pk", s(statusPartition(status, shardOf(runId))))
    .setOrRemove(ATTR.wakeAt, wakeAt === undefined ? undefined : n(wakeAt))
    .setOrRemove(ATTR.waitingFor, update.waitingFor === undefined ? undefined : s(update.waitingFor))
    .remove(ATTR.leaseOwner, ATTR.leaseExpiresAt, ATTR.dueOnRelease);
  const wakeKeys = wakeIndexKeys(runId, status, wakeAt);
  if (wakeKeys) u.setAll(wakeKeys);
  else u.remove("gsi2pk", "gsi2sk");
  const due = u.name(ATTR.dueOnRelease);
  const mark = seenDue === undefined ? `attribute_not_exists(${due})` : `${due} = ${u.value("c_due", n(seenDue))}`;
  return { update: u, condition: `${leaseHeld(u, token)} AND ${mark}` };
}

/** Continue: the next incarnation, with its input, pending and due now, the lease freed. */
export function continueUpdate(runId: string, token: number, update: ContinueUpdate): MetaUpdate {
  const input = toJson(update.input);
  const u = new UpdateBuilder()
    .set(ATTR.status, s("pending"))
    .set(ATTR.updatedAt, n(update.now))
    .set(ATTR.incarnation, n(update.incarnation))
    .setOrRemove(ATTR.input, input === undefined ? undefined : s(input))
    .set(ATTR.wakeAt, n(update.now))
    .set("gsi1pk", s(statusPartition("pending", shardOf(runId))))
    .setAll(wakeIndexKeys(runId, "pending", update.now) ?? {})
    .remove(ATTR.leaseOwner, ATTR.leaseExpiresAt, ATTR.waitingFor, ATTR.dueOnRelease);
  return { update: u, condition: leaseHeld(u, token) };
}

/** Due: a suspended or queued run's wake time moves earlier (never later), into the due index. */
export function markDueUpdate(runId: string, at: number): MetaUpdate {
  const u = new UpdateBuilder().set(ATTR.wakeAt, n(at)).setAll(wakeIndexKeys(runId, "suspended", at) ?? {});
  const wakeAt = u.name(ATTR.wakeAt);
  const waiting = `${u.name(ATTR.status)} IN (${u.value("c_suspended", s("suspended"))}, ${u.value("c_queued", s("queued"))})`;
  const condition = `${waiting} AND (attribute_not_exists(${wakeAt}) OR ${wakeAt} > ${u.value("c_at", n(at))})`;
  return { update: u, condition };
}

/** Due on release: a leased run (lease `token`) is left due by `at` when that lease is released (earlier, never later). */
export function markDueOnReleaseUpdate(token: number, at: number): MetaUpdate {
  const u = new UpdateBuilder().set(ATTR.dueOnRelease, n(at));
  const due = u.name(ATTR.dueOnRelease);
  const running = `${u.name(ATTR.status)} = ${u.value("c_running", s("running"))}`;
  return { update: u, condition: `${leaseHeld(u, token)} AND ${running} AND (attribute_not_exists(${due}) OR ${due} > ${u.value("c_at", n(at))})` };
}

/**
 * Finish: terminal status, out of the due index, lease freed, and `expiresAt` set so TTL removes
 * the meta item after the retention period. Only the holder of the lease (its token) may finish,
 * or anyone a run that was never invoked and holds no lease.
 */
export function finishUpdate(runId: string, update: FinishUpdate, retentionS: number): MetaUpdate {
  const result = toJson(update.result);
  const error = toJson(update.error);
  const u = new UpdateBuilder()
    .set(ATTR.status, s(update.status))
    .set(ATTR.updatedAt, n(update.now))
    .set(ATTR.finishedAt, n(update.now))
    .set(TTL_ATTRIBUTE, n(Math.ceil(update.now / 1000) + retentionS))
    .set("gsi1pk", s(statusPartition(update.status, shardOf(runId))))
    .setOrRemove(ATTR.result, result === undefined ? undefined : s(result))
    .setOrRemove(ATTR.error, error === undefined ? undefined : s(error))
    .remove(ATTR.leaseOwner, ATTR.leaseExpiresAt, ATTR.wakeAt, ATTR.waitingFor, ATTR.dueOnRelease, "gsi2pk", "gsi2sk");
  // What the finish expects: its lease, or a run never invoked and not leased.
  const condition =
    "token" in update.expect
      ? leaseHeld(u, update.expect.token)
      : `attribute_exists(pk) AND ${u.notFinished()} AND attribute_not_exists(${u.name(ATTR.leaseOwner)}) AND ${u.name(ATTR.invocations)} = ${u.value("c_zero", n(0))}`;
  return { update: u, condition };
}

/** The lease `token` is current: held, that token, the run not finished. */
function leaseHeld(u: UpdateBuilder, token: number): string {
  return `attribute_exists(${u.name(ATTR.leaseOwner)}) AND ${u.name(ATTR.leaseToken)} = ${u.value("c_token", n(token))} AND ${u.notFinished()}`;
}
