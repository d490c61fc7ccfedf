/**
 * The run protocol: the one owner of a run's rules, and the only writer of the journal store.
 * Every operation is a protocol event — a grant, an append, a suspension, a finish, a
 * cancellation, a signal, a switch to the next incarnation, a child's start or end — made of one
 * conditional write or a documented sequence of them, each safe to retry after a lost answer.
 * The engine turns an execution into these events; the client, the webhook and every transport
 * ask for them. The rules themselves are written once per kind, in this folder:
 *
 *   leases.ts     grant, renew, release, finish (fenced: a token, or "never invoked")
 *   journal.ts    write-once appends, each able to see the run's cancellation
 *   heartbeat.ts  the lease kept while an invocation runs
 *   admission.ts  debounce, rate windows and concurrency slots before the code runs (flow.ts)
 *   signals.ts    delivering a signal, and the signal/wait handshake
 *   cancel.ts     cancelling: at once if never started, else journaled and delivered
 *   continue.ts   the next incarnation, with nothing left behind in the old one
 *   children.ts   a child's start, cancel and end (its end is its parent's signal)
 *   start.ts      starting a run, idempotently
 *   wake.ts       a sleep ended early (wake now), journaled
 *
 * @example
 * ```ts
 * const protocol = new RunProtocol({ store, wakes, clock: systemClock, workflows });
 * const answer = await protocol.cancel("order-8472", "customer withdrew");
 * if (answer.outcome === "requested") console.log("its compensations run next");
 * ```
 */
import type { AnyWorkflow } from "../definition.ts";
import type { ChildEnd, ChildPort, ParentRef } from "../children.ts";
import type { JournalView } from "../journal-view.ts";
import type { JournalRecord, SignalRecord } from "../records.ts";
import type { Journal, Lease, ReleaseResult, RunMeta, SuspendUpdate, Timers } from "../../ports.ts";
import type { SerializedError } from "../errors.ts";
import type { InvocationResult } from "../engine-types.ts";
import { type Admission, type AdmissionRun, admit, unhosted } from "./admission.ts";
import { type CancelAnswer, cancelRun } from "./cancel.ts";
import { type ChildEndOutcome, cancelChild, childPort, deliverChildEnd, lastWordToParent, notifyParent } from "./children.ts";
import { completeSwitch, continueAsNew } from "./continue.ts";
import { promote } from "./flow.ts";
import { type Hold, startHeartbeat } from "./heartbeat.ts";
import { type Appended, append, load, loadFirst, placeLate, requestOwnCancel, signalArrived } from "./journal.ts";
import { finish, type Grant, grant, type Refusal, release, wakeNow } from "./leases.ts";
import type { RunPorts } from "./ports.ts";
import { deliverSignal, type SameSignal, type SignalReceipt } from "./signals.ts";
import { type StartRequest, startRun } from "./start.ts";
import { type WakeAnswer, wakeSleeps } from "./wake.ts";
import { type Transacted, transact } from "./transact.ts";
import type { RunStepRecord } from "../records.ts";
import type { TxOp } from "../transact/ops.ts";

export type { Transacted };
export type { Admission, AdmissionRun, Appended, CancelAnswer, ChildEndOutcome, Grant, Hold, Refusal, RunPorts, SignalReceipt, StartRequest, WakeAnswer };

/** How a granted invocation ends its run. */
export type Ending =
  | { type: "completed"; result: unknown; stored?: unknown }
  | { type: "failed"; error: SerializedError }
  | { type: "cancelled"; error: SerializedError; result?: unknown };

export class RunProtocol {
  constructor(readonly ports: RunPorts) {}

  // ---- an invocation: lease → load → admit → run → settle --------------------------------

  /** The lease; `wakeAt`, the time of the wake being answered, refuses a suspended run not due by then (leases.ts). */
  grant(runId: string, owner: string, ttlMs: number, mayBreak?: (lease: Lease) => boolean, wakeAt?: number): Promise<Grant | Refusal> {
    return grant(this.ports, runId, owner, ttlMs, mayBreak, wakeAt);
  }

  heartbeat(timers: Timers, ttlMs: number, hold: Hold): { stop(): void } {
    return startHeartbeat(this.ports, timers, ttlMs, hold);
  }

  load(g: Grant): Promise<Journal | undefined> {
    return load(this.ports, g);
  }

  /** The invocation's first read of the journal: none if the grant proved it empty (journal.ts). */
  loadFirst(g: Grant): Promise<Journal | undefined> {
    return loadFirst(this.ports, g);
  }

  /** Journals the places of results that landed late (journal.ts), before the code runs. */
  placeLate(g: Grant, places: ReadonlyArray<{ stepId: string; seq: number }>): Promise<void> {
    return placeLate(this.ports, g, places);
  }

  admit(g: Grant, workflow: AnyWorkflow, run: AdmissionRun): Promise<Admission> {
    return admit({ ...this.ports, grant: g }, workflow, run);
  }

  unhosted(g: Grant, workflow: string): Promise<InvocationResult> {
    return unhosted({ ...this.ports, grant: g }, g.runId, workflow, g.run.waitingFor);
  }

  append(g: Grant, record: JournalRecord, probe: boolean): Promise<Appended> {
    return append(this.ports, g, record, probe);
  }

  /** `step.transact`: the user's writes and the step's record in one transaction (transact.ts). */
  transact(g: Grant, record: RunStepRecord, ops: readonly TxOp[]): Promise<Transacted> {
    return transact(this.ports, g, record, ops);
  }

  /** The run's own deadline: its cancellation, journaled by the invocation that finds it passed. */
  requestOwnCancel(g: Grant, reason: string): Promise<string> {
    return requestOwnCancel(this.ports, g, reason);
  }

  /** Whether a signal reached one of these waits (resolved it, or is buffered for it): read before the release. */
  signalArrived(g: Grant, waits: ReadonlyArray<{ stepId: string; signal?: string }>): Promise<boolean> {
    return signalArrived(this.ports, g, waits);
  }

  /**
   * Releases the lease, the run suspended (or queued) as `update` says. The answer's `wakeAt` is
   * the run's wake time as the store left it: earlier than `update.wakeAt` (or present without
   * one) when a deliverer marked the run while this lease was held (`markDue`, `dueOnRelease`).
   */
  suspend(g: Grant, update: SuspendUpdate): Promise<ReleaseResult> {
    return release(this.ports, g, update);
  }

  /**
   * After a fault: the run released, due again at `at`, for the wake that faulted to find it
   * due when it comes back (a `not-due` refusal would acknowledge it). The release may find the
   * run released already, by this same invocation before the fault (a sleep's wake that could
   * not be sent after it): that release's time stands, so the run is marked due at `at` too —
   * unless the release answers the run due by `at` already. False if the lease was no longer ours.
   */
  async releaseAfterFault(g: Grant, now: number, at: number): Promise<boolean> {
    const res = await release(this.ports, g, { now, wakeAt: at, waitingFor: "retry" });
    if (!res.released) return false;
    if (res.wakeAt === undefined || res.wakeAt > at) await this.ports.store.markDue(g.runId, at);
    return true;
  }

  /** Marks the run due now, then wakes it (so the wake finds it due, and the watchdog does if the wake is lost). */
  wakeNow(runId: string, reason: "signal" | "cancel" | "start", key: string): Promise<void> {
    return wakeNow(this.ports, runId, reason, key);
  }

  /** Ends the run under this grant's lease; false if the lease was no longer ours. */
  finish(g: Grant, ending: Ending): Promise<boolean> {
    const now = this.ports.clock.now();
    const expect = { token: g.token };
    if (ending.type === "completed") return finish(this.ports, g.runId, { now, status: "completed", result: ending.stored ?? ending.result, expect });
    if (ending.type === "failed") return finish(this.ports, g.runId, { now, status: "failed", error: ending.error, expect });
    return finish(this.ports, g.runId, { now, status: "cancelled", error: ending.error, expect, ...(ending.result === undefined ? {} : { result: ending.result }) });
  }

  continueAsNew(g: Grant, view: JournalView, input: unknown): Promise<boolean> {
    return continueAsNew(this.ports, g, view, input);
  }

  /** Before anything runs in a continued incarnation: carries on what its switch may have left behind; true when it did. */
  completeSwitch(g: Grant): Promise<boolean> {
    return completeSwitch(this.ports, g);
  }

  /**
   * Frees the run's flow-control slot. Only while the invocation provably holds the run's lease:
   * slots belong to runs, so once another invocation of the run holds the lease, the slot it
   * holds is the same one (see `engine-slot.ts`).
   */
  freeSlot(slot: { scope: string }, runId: string): Promise<void> {
    return this.ports.store.freeSlot(slot.scope, runId);
  }

  /**
   * Takes an ended run out of its key's queue. Its own admission took it out when it took its
   * slot, but an invocation that had lost the lease may have put it back since (its release
   * applied, the run taken and admitted by the next, its enqueue after); nobody else takes that
   * entry off before it reaches the head.
   */
  leaveQueue(scope: string, runId: string, createdAt: number): Promise<unknown> {
    return this.ports.store.dequeue(scope, { runId, at: createdAt });
  }

  /** Hands free slots of the scope to the first queued runs that still wait. */
  handOnSlot(slot: { scope: string; limit: number }): Promise<void> {
    return promote(this.ports, slot.scope, slot.limit);
  }

  /** Starts and cancels children of a parent in `incarnation`. */
  children(incarnation: number): ChildPort {
    return childPort(this.ports, incarnation);
  }

  notifyParent(parent: ParentRef, childRunId: string, end: ChildEndOutcome, error?: SerializedError): Promise<void> {
    return notifyParent(this.ports, parent, childRunId, end, error);
  }

  lastWordToParent(runId: string, end: { type: "failed"; error: SerializedError }): Promise<void> {
    return lastWordToParent(this.ports, runId, end);
  }

  // ---- callers outside an invocation ----------------------------------------------------

  start(def: AnyWorkflow, req: StartRequest): Promise<{ created: boolean; run: RunMeta }> {
    return startRun(this.ports, def, req);
  }

  signal(run: RunMeta, signal: SignalRecord, same: SameSignal): Promise<SignalReceipt> {
    return deliverSignal(this.ports, run, signal, same);
  }

  cancel(runId: string, reason: string): Promise<CancelAnswer> {
    return cancelRun(this.ports, runId, reason);
  }

  /** Ends the run's current sleep (or the one named) early, journaled, and wakes it. */
  wake(runId: string, stepId?: string): Promise<WakeAnswer> {
    return wakeSleeps(this.ports, runId, stepId);
  }

  /** A child's end from another deployment, for its parent here. */
  deliverChildEnd(end: ChildEnd): Promise<void> {
    return deliverChildEnd(this.ports, end);
  }

  /** Another deployment's parent cancelling its child here; false if it is not that parent's child here. */
  cancelChild(runId: string, reason: string, parent: ParentRef): Promise<boolean> {
    return cancelChild(this.ports, runId, reason, parent);
  }
}
