/**
 * Releasing a run and marking it due, on DynamoDB, with the `dueOnRelease` mark: a signal that
 * reaches a leased run marks it, and the release of that lease leaves the run due by the mark
 * (ports.ts, `markDue` and `releaseLease`). An `UpdateItem` cannot branch on the item, so each is
 * a conditional write that, refused, reads the item it was refused by (the refusal returns it)
 * and sends the transition that item calls for. Each refusal is another writer's transition, so
 * a few tries suffice; every write is safe to send again after a lost answer.
 */
import type { MarkDueResult, SuspendUpdate } from "../ports.ts";
import { type Applied, appliedRelease, earliest, type Released } from "../core/journal-base.ts";
import { ContendedWriteError } from "./errors.ts";
import { markDueOnReleaseUpdate, markDueUpdate, type MetaUpdate, releaseUpdate } from "./dynamodb-transitions.ts";

/** Sends one conditional meta update: applied, or refused with the item as it was. */
export type ApplyMeta = (update: MetaUpdate) => Promise<Applied>;

const TRIES = 4;

/**
 * The release; a run marked due on release is released again with the mark it had, the earlier
 * wake time kept. Applied, it answers the wake time it wrote: the write that applied knew the
 * mark it was conditioned on (none, or `seenDue`), so no read is needed to say it.
 */
export async function releaseMarked(apply: ApplyMeta, runId: string, token: number, update: SuspendUpdate): Promise<Released> {
  let seenDue: number | undefined;
  let res = await apply(releaseUpdate(runId, token, update));
  for (let tries = 0; !res.applied && res.run?.lease?.token === token && res.run.dueOnRelease !== undefined && tries < TRIES; tries++) {
    seenDue = res.run.dueOnRelease;
    res = await apply(releaseUpdate(runId, token, update, seenDue));
  }
  if (!res.applied) return res;
  return appliedRelease(earliest(update.wakeAt, seenDue));
}

/**
 * Suspended or queued: due by `at`; leased: due by `at` once released; otherwise nothing. The
 * first try is the transition the caller's read calls for (`leased`: the run's lease). The
 * answer names the transition that applied (`MarkDueResult`).
 */
export async function markDue(apply: ApplyMeta, runId: string, at: number, leased?: { token: number }): Promise<MarkDueResult> {
  let onRelease = leased !== undefined;
  let res = await apply(onRelease && leased ? markDueOnReleaseUpdate(leased.token, at) : markDueUpdate(runId, at));
  for (let tries = 0; !res.applied && res.run; tries++) {
    const run = res.run;
    if (run.status === "running" && run.lease) {
      if (run.dueOnRelease !== undefined && run.dueOnRelease <= at) return "none";
      if (tries === TRIES) break;
      onRelease = true;
      res = await apply(markDueOnReleaseUpdate(run.lease.token, at));
    } else if (run.status === "suspended" || run.status === "queued") {
      if (run.wakeAt !== undefined && run.wakeAt <= at) return "none";
      if (tries === TRIES) break;
      onRelease = false;
      res = await apply(markDueUpdate(runId, at));
    } else return "none";
  }
  // Refused every time by a run that still needs the mark: the wake the caller sends next would
  // find the run not due (`not-due`), so the caller fails and is retried instead.
  if (!res.applied && res.run) throw new ContendedWriteError(runId, TRIES + 1);
  if (!res.applied) return "none";
  return onRelease ? "on-release" : "due";
}
