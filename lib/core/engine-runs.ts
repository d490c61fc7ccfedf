/**
 * What an invocation does to runs other than its own, and to its run's journal outside the
 * workflow's steps: start and cancel children, deliver a child's end to its parent, journal a
 * cancellation request, switch to the next incarnation. Plain functions over the ports, used by
 * the engine (and the client, for cancellation).
 */
import { serializeError } from "./error-codec.ts";
import { CancelledError, InvalidInputError, RunConflictError, type SerializedError, UnknownWorkflowError, ValueTooLargeError } from "./errors.ts";
import { metaRef } from "./payloads.ts";
import { JOURNAL_VERSION, keyOf, keys, type ParentRecord } from "./records.ts";
import { CHILD_END_MAX_BYTES, CHILD_SIGNAL, type ChildEnd, type ChildOutcome, type ChildPort, type ParentRef, type RemoteChildren } from "./children.ts";
import { type Clock, type JournalStore, TERMINAL_STATUSES, type WakeQueue } from "../ports.ts";
import { journalIdOf } from "./incarnation.ts";
import { JournalView } from "./journal-view.ts";
import type { InvocationResult } from "./engine-types.ts";
import type { Registry } from "./registry.ts";
import { zodIssues } from "./zod-issues.ts";
import { validate } from "./validate.ts";

/** The ports these operations use. */
export interface RunOps {
  store: JournalStore;
  clock: Clock;
  wakes: WakeQueue;
  workflows: Registry;
  /** Children hosted by other deployments, and parents in them (children.ts). */
  remote?: RemoteChildren | undefined;
}

/**
 * What executions use to start and cancel children (children.ts), from a parent in
 * `incarnation`; also what a deployment runs when another deployment's parent starts a child
 * here (lib/aws/child-entry.ts: the parent's reference then carries its own incarnation and
 * `replyTo`). A workflow not hosted here goes to `o.remote`, if there is one.
 */
export function childPort(o: RunOps, incarnation: number): ChildPort {
  const { store, clock, wakes } = o;
  return {
    start: async ({ workflow, runId, input, parent: given }) => {
      const parent = given && inIncarnation(given, incarnation);
      const def = o.workflows.get(workflow);
      if (!def && o.remote) {
        await o.remote.start({ workflow, runId, input, ...(parent ? { parent } : {}) });
        return runId;
      }
      if (!def) throw new UnknownWorkflowError(workflow);
      const checked = validate(def.input, input);
      if (!checked.success) throw new InvalidInputError(`invalid input for child workflow "${workflow}"`, zodIssues(checked.error));
      const now = clock.now();
      const { created, run } = await store.createRun({ runId, workflow, input, createdAt: now });
      if (!created && run.workflow !== workflow) throw new RunConflictError(runId);
      if (parent) {
        const body: ParentRecord = { v: JOURNAL_VERSION, at: now, type: "parent", ...parent };
        const res = await store.appendRecord(runId, { key: keys.parent(), body });
        const existing = res.written ? body : (res.existing.body as ParentRecord);
        // Another parent's child (another deployment, another incarnation): never shared.
        if (!sameParent(existing, parent)) throw new RunConflictError(runId);
      }
      if (created || run.status === "pending") await wakes.schedule({ runId, at: now, reason: "start", key: "start" });
      // Started by an earlier attempt of this step and already over: deliver its end again.
      if (parent && TERMINAL_STATUSES.has(run.status)) {
        const end = run.status === "completed" ? { type: "completed" as const, result: run.result } : run.status === "cancelled" ? { type: "cancelled" as const, reason: "" } : { type: "failed" as const, error: run.error ?? { name: "Error", message: "failed" } };
        await notifyParent(o, parent, runId, end, run.error);
      }
      return runId;
    },
    cancel: async (request) => {
      const parent = inIncarnation(request.parent, incarnation);
      if (!o.workflows.has(request.workflow) && o.remote) return o.remote.cancel({ ...request, parent });
      await cancelChild(o, request.runId, request.reason, parent);
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
export async function cancelChild(o: Pick<RunOps, "store" | "clock" | "wakes">, runId: string, reason: string, parent: ParentRef): Promise<boolean> {
  const run = await o.store.getRun(runId);
  const record = run ? await o.store.getRecord(runId, keys.parent()) : undefined;
  if (!run || !record || !sameParent(record.body as ParentRecord, parent)) return false;
  if (!TERMINAL_STATUSES.has(run.status)) await askToCancel(o, runId, run.incarnation, reason);
  return true;
}

/**
 * Asks a run to cancel (`client.cancel`, a parent's cancellation): journals the request in the
 * run's current incarnation (following a switch that raced it), marks the run due and wakes it.
 */
export async function askToCancel(o: Pick<RunOps, "store" | "clock" | "wakes">, runId: string, incarnation: number | undefined, reason: string): Promise<void> {
  const body = { v: JOURNAL_VERSION, at: o.clock.now(), type: "cancel", reason };
  await o.store.appendRecord(journalIdOf(runId, incarnation), { key: keys.cancel(), body });
  await followIncarnation(o, runId, incarnation, keys.cancel(), body);
  const now = o.clock.now();
  await o.store.markDue(runId, now);
  await o.wakes.schedule({ runId, at: now, reason: "cancel", key: "cancel" });
}

/**
 * A record written to the incarnation that was current when the run was read: if the run has
 * moved on since (continueAsNew), write it to the current one too (same body: idempotent). The
 * switch moves unconsumed signals and a cancel itself; this covers a write that raced it.
 */
export async function followIncarnation(o: Pick<RunOps, "store">, runId: string, read: number | undefined, key: string, body: unknown): Promise<void> {
  const now = await o.store.getRun(runId);
  if (!now || (now.incarnation ?? 1) === (read ?? 1) || TERMINAL_STATUSES.has(now.status)) return;
  await o.store.appendRecord(journalIdOf(runId, now.incarnation), { key, body });
}

/**
 * Delivers a child's end to its parent: to the parent's wait in this deployment, or through
 * `o.remote` to the parent's own deployment (`parent.replyTo`). Idempotent (one signal id per child).
 */
export async function notifyParent(
  o: RunOps,
  parent: ParentRef,
  childRunId: string,
  end: { type: "completed"; result: unknown } | { type: "failed"; error: SerializedError } | { type: "cancelled"; reason: string },
  error?: SerializedError,
): Promise<void> {
  let outcome: ChildOutcome =
    end.type === "completed" ? { status: "completed", result: end.result } : end.type === "failed" ? { status: "failed", error: end.error } : { status: "cancelled", error: error ?? serializeError(new CancelledError(end.reason)) };
  if (parent.replyTo === undefined) return deliverChildEnd(o, { parent, childRunId, outcome });
  // A result the child's deployment stores by reference cannot be read by the parent's.
  const ref = outcome.status === "completed" ? metaRef(outcome.result) : undefined;
  if (ref) outcome = { status: "failed", error: serializeError(new ValueTooLargeError(`result of child run ${childRunId}`, ref.bytes, CHILD_END_MAX_BYTES)) };
  if (!o.remote) throw new Error(`run ${childRunId} was started by a parent in another deployment (${parent.replyTo}), and this runtime cannot reach it`);
  await o.remote.notify({ parent, childRunId, outcome });
}

/**
 * A child ending for good outside its workflow (its invocation budget spent): its parent, if it
 * has one, is told once more, and a failure to tell it is logged, not thrown — the run ends
 * either way (an end that can never be delivered must not keep the run alive).
 */
export async function lastWordToParent(o: RunOps & { log?: ((entry: { event: string; runId: string } & Record<string, unknown>) => void) | undefined }, runId: string, end: { type: "failed"; error: SerializedError }): Promise<void> {
  try {
    const record = await o.store.getRecord(runId, keys.parent());
    if (record) await notifyParent(o, record.body as ParentRecord, runId, end);
  } catch (err) {
    o.log?.({ event: "parent-not-told", runId, error: err instanceof Error ? `${err.name}: ${err.message}` : String(err) });
  }
}

/**
 * Records a child's end as the `__child` signal bound to the parent's wait, marks the parent due
 * and wakes it. Idempotent: the signal id is the child's run id. The AWS runtime calls it when a
 * child in another deployment sends its end to this one's queue.
 */
export async function deliverChildEnd(o: Pick<RunOps, "store" | "clock" | "wakes">, { parent, childRunId, outcome }: ChildEnd): Promise<void> {
  const { store, clock, wakes } = o;
  const now = clock.now();
  const signalId = `child:${childRunId}`;
  const body = { v: JOURNAL_VERSION, at: now, type: "signal", signalId, name: CHILD_SIGNAL, payload: outcome, waitId: parent.waitId };
  await store.appendRecord(journalIdOf(parent.runId, parent.incarnation), { key: keys.signal(signalId), body });
  await store.markDue(parent.runId, now);
  await wakes.schedule({ runId: parent.runId, at: now, reason: "signal", key: "signal" });
}

/** Journals a cancellation request (write-once: an earlier one's reason stands). */
export async function requestCancel(o: Pick<RunOps, "store" | "clock">, journalId: string, reason: string): Promise<string> {
  const body = { v: JOURNAL_VERSION, at: o.clock.now(), type: "cancel", reason };
  const res = await o.store.appendRecord(journalId, { key: keys.cancel(), body });
  const existing = res.written ? undefined : (res.existing.body as { reason?: unknown }).reason;
  return typeof existing === "string" ? existing : reason;
}

/**
 * The next incarnation: signals nobody consumed (as the journal says now) move to its journal first (same bodies, so a
 * retry after a crash rewrites nothing), then one conditional write switches the run over, and
 * a start wake runs it. A crash before the switch leaves this incarnation to be replayed, which
 * ends here again.
 */
export async function continueAsNew(o: RunOps & { log?: ((entry: { event: string; runId: string } & Record<string, unknown>) => void) | undefined }, runId: string, token: number, incarnation: number, view: JournalView, input: unknown): Promise<InvocationResult> {
  const { store, clock } = o;
  const next = incarnation + 1;
  // Read again: a wait of this invocation consumed signals after `view` was read (a buffered
  // signal, a child's end), and those must not move on to be consumed a second time.
  const now = await store.loadJournal(runId, { incarnation });
  const signals = now ? JournalView.parse(runId, now.records).unconsumedSignals() : view.unconsumedSignals();
  for (const signal of signals) await store.appendRecord(journalIdOf(runId, next), { key: keyOf(signal), body: signal });
  const parent = view.parent();
  if (parent) await store.appendRecord(journalIdOf(runId, next), { key: keyOf(parent), body: parent });
  // A cancellation requested while this invocation ran (after its journal was read) goes along.
  const cancel = await store.getRecord(journalIdOf(runId, incarnation), keys.cancel());
  if (cancel) await store.appendRecord(journalIdOf(runId, next), { key: keys.cancel(), body: cancel.body });
  const ok = await store.continueRun(runId, token, { now: clock.now(), input, incarnation: next });
  if (!ok) return { status: "lost-lease" };
  o.log?.({ event: "continued", runId, incarnation: next });
  await o.wakes.schedule({ runId, at: clock.now(), reason: "start", key: "start" });
  return { status: "continued", incarnation: next };
}
