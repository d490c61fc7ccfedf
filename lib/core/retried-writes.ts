/**
 * How a store recognises its own write on a retry. A request whose first attempt was applied but
 * whose answer was lost is sent again (by the SDK, or by a caller); its condition now fails on
 * the state the first attempt left. These predicates tell "that state is my own effect" (answer
 * success) from "someone else got there first" (answer the conflict). Every store uses them, so
 * the rule reads the same on SQLite, DynamoDB and memory.
 */
import { canonicalJson } from "./json.ts";
import { type ContinueUpdate, type FinishUpdate, type RunMeta, TERMINAL_STATUSES } from "../ports.ts";

/** The record already stored is the one being written (same key, same body): a retried append. */
export function sameBody(stored: unknown, written: unknown): boolean {
  return canonicalJson(stored) === canonicalJson(written);
}

/** The lease on `meta` is `owner`'s current grant (owners are unique per invocation). */
export function isOwnGrant(meta: RunMeta | undefined, owner: string): boolean {
  return meta?.lease !== undefined && meta.lease.owner === owner && meta.lease.token === meta.leaseToken && !TERMINAL_STATUSES.has(meta.status);
}

/**
 * The run was released by the holder of `token`: nobody was granted a lease since (the token is
 * still the last one granted), no lease is held, and it is suspended (or queued). Only that
 * holder's release removes a lease without finishing the run, so this is the first attempt's effect.
 */
export function isReleased(meta: RunMeta | undefined, token: number): boolean {
  return meta !== undefined && meta.leaseToken === token && meta.lease === undefined && (meta.status === "suspended" || meta.status === "queued");
}

/** The run was continued by the holder of `token` into this very incarnation. */
export function isContinuedBy(meta: RunMeta | undefined, token: number, update: ContinueUpdate): boolean {
  return meta !== undefined && meta.leaseToken === token && meta.lease === undefined && (meta.incarnation ?? 1) === update.incarnation;
}

/**
 * The run was finished by this very update: same status, same time, and what it expected — the
 * holder of that token (still the last granted), or a run never invoked (still none granted).
 */
export function isFinishedBy(meta: RunMeta | undefined, update: FinishUpdate): boolean {
  if (meta === undefined || meta.status !== update.status || meta.finishedAt !== update.now) return false;
  return "token" in update.expect ? meta.leaseToken === update.expect.token : meta.invocations === 0;
}
