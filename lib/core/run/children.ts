/**
 * Children as the protocol sees them: a child is a run whose `parent` record names the parent's
 * run, wait, incarnation and (across deployments) reply queue; its end becomes the parent's
 * `__child` signal, bound to that wait. Starting, cancelling and ending are idempotent.
 */
import { serializeError } from "../error-codec.ts";
import { CancelledError, InvalidInputError, RunConflictError, type SerializedError, UnknownWorkflowError, ValueTooLargeError } from "../errors.ts";
import { metaRef } from "../payloads.ts";
import { JOURNAL_VERSION, keys, type ParentRecord } from "../records.ts";
import { CHILD_END_MAX_BYTES, CHILD_SIGNAL, type ChildEnd, type ChildOutcome, type ChildPort, type ParentRef } from "../children.ts";
import { type RunMeta, TERMINAL_STATUSES } from "../../ports.ts";
import { validate } from "../validate.ts";
import { zodIssues } from "../zod-issues.ts";
import { askToCancel } from "./cancel.ts";
import { journalIdOf } from "./journal-ids.ts";
import type { RunPorts } from "./ports.ts";

/** A child run's end, as its parent is told. */
export type ChildEndOutcome = { type: "completed"; result: unknown } | { type: "failed"; error: SerializedError } | { type: "cancelled"; reason: string };

/**
 * What executions use to start and cancel children, from a parent in `incarnation`; also what a
 * deployment runs when another deployment's parent starts a child here (lib/aws/child-entry.ts:
 * the parent's reference then carries its own incarnation and `replyTo`). A workflow not hosted
 * here goes to `p.remote`, if there is one.
 */
export function childPort(p: RunPorts, incarnation: number): ChildPort {
  const { store, clock, wakes } = p;
  return {
    start: async ({ workflow, runId, input, parent: given }) => {
      const parent = given && inIncarnation(given, incarnation);
      const def = p.workflows.get(workflow);
      if (!def && p.remote) {
        await p.remote.start({ workflow, runId, input, ...(parent ? { parent } : {}) });
        return runId;
      }
      if (!def) throw new UnknownWorkflowError(workflow);
      const checked = validate(def.input, input);
      if (!checked.success) throw new InvalidInputError(`invalid input for child workflow "${workflow}"`, zodIssues(checked.error));
      const now = clock.now();
      /** This start wrote the parent record: no earlier attempt of this start got that far. */
      let wroteParent = false;
      if (parent) {
        // The parent record comes first: no invocation of the child can run (and end) without it,
        // so its end always reaches its parent. (A journal's records may precede its run.)
        const body: ParentRecord = { v: JOURNAL_VERSION, at: now, type: "parent", ...parent };
        const res = await store.appendRecord(runId, { key: keys.parent(), body });
        const existing = res.written ? body : (res.existing.body as ParentRecord);
        // Another parent's child (another deployment, another incarnation): never shared.
        if (!sameParent(existing, parent)) throw new RunConflictError(runId, "as a child of another parent");
        wroteParent = res.written;
      }
      const { created, run } = await store.createRun({ runId, workflow, input, createdAt: now, ...(parent ? { child: true as const } : {}) });
      if (!created && run.workflow !== workflow) throw new RunConflictError(runId);
      // A run that existed before this start's parent record and was not created as a child: a
      // client started it. Its invocations may have read its journal without the record (its
      // first may read none at all: \`emptyJournal\`), so it could end without telling the parent;
      // it is not adopted. (A run an earlier attempt created found the record already there, and
      // one a concurrent attempt created is a child: \`wroteParent\` alone would refuse those.)
      if (!created && wroteParent && run.child !== true) throw new RunConflictError(runId, "as a run a client started, not as a child");
      if (created || run.status === "pending") await wakes.schedule({ runId, at: now, reason: "start", key: "start" });
      // Started by an earlier attempt of this step and already over: deliver its end again.
      if (parent && TERMINAL_STATUSES.has(run.status)) {
        const end: ChildEndOutcome = run.status === "completed" ? { type: "completed", result: run.result } : run.status === "cancelled" ? { type: "cancelled", reason: "" } : { type: "failed", error: run.error ?? { name: "Error", message: "failed" } };
        await notifyParent(p, parent, runId, end, run.error);
      }
      return runId;
    },
    cancel: async (request) => {
      const parent = inIncarnation(request.parent, incarnation);
      if (!p.workflows.has(request.workflow) && p.remote) return p.remote.cancel({ ...request, parent });
      await cancelChild(p, request.runId, request.reason, parent);
    },
  };
}

/** A parent reference from a parent in `incarnation` (one that names its own is kept as it is). */
function inIncarnation(parent: ParentRef, incarnation: number): ParentRef {
  return incarnation > 1 && parent.incarnation === undefined ? { ...parent, incarnation } : parent;
}

/** The same parent: run, wait, incarnation and reply queue. */
export function sameParent(a: ParentRef, b: ParentRef): boolean {
  return a.runId === b.runId && a.waitId === b.waitId && (a.incarnation ?? 1) === (b.incarnation ?? 1) && a.replyTo === b.replyTo;
}

/**
 * A parent's cancel of its child: only a run whose parent record names this parent, and that has
 * not ended, is asked to cancel. False when the run is not here, or is another parent's child.
 */
export async function cancelChild(p: RunPorts, runId: string, reason: string, parent: ParentRef): Promise<boolean> {
  const run = await p.store.getRun(runId);
  const record = run ? await p.store.getRecord(runId, keys.parent()) : undefined;
  if (!run || !record || !sameParent(record.body as ParentRecord, parent)) return false;
  if (!TERMINAL_STATUSES.has(run.status)) await askToCancel(p, run, reason);
  return true;
}

/**
 * Delivers a child's end to its parent: to the parent's wait in this deployment, or through
 * `p.remote` to the parent's own deployment (`parent.replyTo`). Idempotent (one signal id per child).
 */
export async function notifyParent(p: RunPorts, parent: ParentRef, childRunId: string, end: ChildEndOutcome, error?: SerializedError): Promise<void> {
  let outcome: ChildOutcome =
    end.type === "completed" ? { status: "completed", result: end.result } : end.type === "failed" ? { status: "failed", error: end.error } : { status: "cancelled", error: error ?? serializeError(new CancelledError(end.reason)) };
  if (parent.replyTo === undefined) return deliverChildEnd(p, { parent, childRunId, outcome });
  // A result the child's deployment stores by reference cannot be read by the parent's.
  const ref = outcome.status === "completed" ? metaRef(outcome.result) : undefined;
  if (ref) outcome = { status: "failed", error: serializeError(new ValueTooLargeError(`result of child run ${childRunId}`, ref.bytes, CHILD_END_MAX_BYTES)) };
  if (!p.remote) throw new Error(`run ${childRunId} was started by a parent in another deployment (${parent.replyTo}), and this runtime cannot reach it`);
  await p.remote.notify({ parent, childRunId, outcome });
}

/**
 * A child ending for good outside its workflow (its invocation budget spent): its parent, if it
 * has one, is told once more, and a failure to tell it is logged, not thrown — the run ends
 * either way (an end that can never be delivered must not keep the run alive).
 */
export async function lastWordToParent(p: RunPorts, runId: string, end: { type: "failed"; error: SerializedError }): Promise<void> {
  try {
    const record = await p.store.getRecord(runId, keys.parent());
    if (record) await notifyParent(p, record.body as ParentRecord, runId, end);
  } catch (err) {
    p.log?.({ event: "parent-not-told", runId, error: err instanceof Error ? `${err.name}: ${err.message}` : String(err) });
  }
}

/**
 * Records a child's end as the `__child` signal bound to the parent's wait and, if the parent
 * needs it, marks it due and wakes it. Idempotent: the signal id is the child's run id. The AWS
 * runtime calls it when a child in another deployment sends its end to this one's queue.
 *
 * A parent with many children would otherwise take a `markDue` and a wake per child, all on its
 * one meta item, and wake once per child. After the signal is written, the parent is read (one
 * consistent read) and written only when it would not see the signal otherwise:
 *
 * - it is already due (`wakeAt` passed: another child, a timer or a signal marked it, and its wake
 *   is on its way; if that wake was lost, the watchdog finds the run by that due time), or it has
 *   ended: nothing is written;
 * - it holds a lease in the signal's incarnation: the holder may have read the journal before the
 *   signal came. So the run is marked due on release (`markDue` sets `dueOnRelease` on a leased
 *   run, once per lease: a run that has it is left alone), and no wake is sent (one would find the
 *   run busy): the holder's release answers the mark's time and the holder wakes the run at it
 *   (engine-settle.ts); if it dies or fails between the release and that wake, the release has
 *   left the run due. A holder that ends without releasing leaves `wakeAt` at its lease's expiry,
 *   which the watchdog and the failover find. A release that lands between this read and the
 *   mark: the mark then makes the suspended run due, `markDue` answers `due`, and the wake is
 *   this deliverer's to send.
 * - otherwise (suspended, or queued, and not due; another incarnation; a run not found) it is
 *   marked due and woken.
 *
 * So a run is never left suspended with a signal it has not seen and no due time: the lost-wake
 * guarantee rests on `wakeAt` as it always did, at one write per parent invocation for all the
 * children that end while it runs, not one per child.
 */
export async function deliverChildEnd(p: RunPorts, { parent, childRunId, outcome }: ChildEnd): Promise<void> {
  const { store, clock, wakes } = p;
  const now = clock.now();
  const signalId = `child:${childRunId}`;
  const body = { v: JOURNAL_VERSION, at: now, type: "signal", signalId, name: CHILD_SIGNAL, payload: outcome, waitId: parent.waitId };
  await store.appendRecord(journalIdOf(parent.runId, parent.incarnation), { key: keys.signal(signalId), body });
  const run = await store.getRun(parent.runId);
  const seen = parentSees(run, parent.incarnation ?? 1, now);
  if (seen === "yes") return;
  const marked = await store.markDue(parent.runId, now, seen === "on-release" && run?.lease ? { token: run.lease.token } : undefined);
  // Left to the holder's release; or, read leased, already due by the time of the mark (the
  // holder's release answered it). Made due here (read leased, released since): ours to wake.
  if (marked === "on-release" || (seen === "on-release" && marked === "none")) return;
  await wakes.schedule({ runId: parent.runId, at: now, reason: "signal", key: "signal" });
}

/**
 * Whether the parent, as read after its signal was written, sees that signal without a write
 * (`yes`), once its lease is released due (`on-release`: a `markDue` and no wake), or only if it
 * is marked due and woken (`no`). See `deliverChildEnd`.
 */
function parentSees(run: RunMeta | undefined, incarnation: number, now: number): "yes" | "on-release" | "no" {
  if (!run) return "no";
  if (TERMINAL_STATUSES.has(run.status)) return "yes";
  if ((run.incarnation ?? 1) !== incarnation) return "no";
  if (run.lease !== undefined) return run.dueOnRelease !== undefined && run.dueOnRelease <= now ? "yes" : "on-release";
  return run.wakeAt !== undefined && run.wakeAt <= now ? "yes" : "no";
}
