/**
 * What a run must pass before its code runs in an invocation: its workflow hosted here (else it
 * waits, backing off), its debounce period and still being its key's latest start, its rate
 * window, and a concurrency slot of its key (flow-control.ts holds the rules and the scopes).
 * Each refusal releases the lease with what the run now waits for; the engine does the rest.
 */
import type { AnyWorkflow } from "../definition.ts";
import type { InvocationResult } from "../engine-types.ts";
import { debounceScope, flowScope, QUEUED_RECHECK_MS, rateScope, waitingInQueue } from "../flow-control.ts";
import type { SuspendUpdate } from "../../ports.ts";
import { keys } from "../records.ts";
import { enter, promote } from "./flow.ts";
import { expiryMargin } from "./heartbeat.ts";
import { type Grant, release, wakeNow } from "./leases.ts";
import type { RunPorts } from "./ports.ts";

/** What admission works with: the ports, and this invocation's grant. */
export interface AdmissionPorts extends RunPorts {
  grant: Grant;
}

async function releaseAs(o: AdmissionPorts, update: SuspendUpdate): Promise<boolean> {
  return (await release(o, o.grant, update)).released;
}

export type Admission =
  | { type: "run"; slot?: { scope: string; limit: number; expiresAt: number } }
  /** Not now: the lease is released (or lost), and this is the invocation's result. */
  | { type: "wait"; result: InvocationResult }
  /** Never: end the run so. */
  | { type: "finish"; outcome: { type: "cancelled"; reason: string } };

/** Runs of a workflow no deploy here hosts are retried after 10 s, 40 s, 160 s, … up to an hour. */
const UNHOSTED_FIRST_MS = 10_000;
const UNHOSTED_MAX_MS = 3_600_000;
const UNHOSTED = /^workflow-not-hosted:(?:.*):(\d+)$/;

/** A run whose workflow (or version) is not hosted here: it waits, backing off, and says why. */
export async function unhosted(o: AdmissionPorts, runId: string, workflow: string, previous: string | undefined): Promise<InvocationResult> {
  const attempt = Number(UNHOSTED.exec(previous ?? "")?.[1] ?? 0) + 1;
  const now = o.clock.now();
  const wakeAt = now + Math.min(UNHOSTED_MAX_MS, UNHOSTED_FIRST_MS * 4 ** (attempt - 1));
  o.log?.({ event: "unhosted", runId, workflow, attempt, wakeAt });
  if (!(await releaseAs(o, { now, wakeAt, waitingFor: `workflow-not-hosted:${workflow}:${attempt}` }))) return { status: "lost-lease" };
  // No wake is sent: the watchdog finds the run when `wakeAt` passes (and so does a deploy's).
  return { status: "unhosted", workflow, wakeAt };
}

/** A leaked slot is looked at again this long after it must have expired (clocks differ a little). */
const SLOT_EXPIRY_MARGIN_MS = 100;

/** Waits until `wakeAt` with the lease released (`queued` for a rate window), woken by a wake of `key`. */
async function waitUntil(o: AdmissionPorts, runId: string, wakeAt: number, waitingFor: string, key: string, result: InvocationResult): Promise<Admission> {
  const ok = await releaseAs(o, { now: o.clock.now(), wakeAt, waitingFor, ...(result.status === "queued" ? { status: "queued" } : {}) });
  if (ok) await o.wakes.schedule({ runId, at: wakeAt, reason: "start", key });
  return { type: "wait", result: ok ? result : { status: "lost-lease" } };
}

/** The run being admitted, as this invocation found it. */
export interface AdmissionRun {
  runId: string;
  /** Its current incarnation's journal id (where a cancellation is recorded). */
  journalId: string;
  createdAt: number;
  input: unknown;
  /** No step recorded yet. */
  firstExecution: boolean;
  /** The lease length: a slot not renewed for this long has expired. */
  leaseTtlMs: number;
  /** A cancellation requested, as the journal read at the start of the invocation says. */
  cancelReason?: string | undefined;
}

/**
 * The debounce, rate and concurrency rules of `workflow` for this run. A first execution (no
 * step recorded yet) is when a start is debounced and counted against the rate. A run that would
 * queue (status `queued`) with nothing run yet and its cancellation requested ends `cancelled`
 * instead: it has nothing to compensate.
 */
export async function admit(o: AdmissionPorts, workflow: AnyWorkflow, run: AdmissionRun): Promise<Admission> {
  const { runId, createdAt, input, firstExecution, cancelReason } = run;
  const cancelled: Admission | undefined = cancelReason !== undefined && firstExecution ? { type: "finish", outcome: { type: "cancelled", reason: cancelReason } } : undefined;
  const { store, clock } = o;
  const debounce = workflow.debounce;
  if (debounce && firstExecution) {
    // Wait out the period from the start, then run only if no later start of the key came.
    const due = createdAt + debounce.periodMs;
    if (clock.now() < due) return waitUntil(o, runId, due, "debounce", "start", { status: "suspended", wakeAt: due, waitingFor: "debounce" });
    const latest = await store.latest(debounceScope(workflow.key, String(debounce.key(input))));
    if (latest !== undefined && latest !== runId) return { type: "finish", outcome: { type: "cancelled", reason: `superseded by ${latest}` } };
  }
  const rate = workflow.rateLimit;
  if (rate && rate.onLimit !== "reject" && firstExecution) {
    // The first execution takes its start from the rate window, or waits for one.
    const scope = rateScope(workflow.key, String(rate.key(input)));
    const now = clock.now();
    if (!(await store.takeSlot(scope, rate.limit, { runId, expiresAt: now + rate.periodMs }, now))) {
      if (cancelled) return cancelled;
      const waiting = await waitUntil(o, runId, now + Math.max(1_000, Math.ceil(rate.periodMs / rate.limit)), `rate-limited:${scope}`, "rate", { status: "queued", scope });
      if (waiting.type === "wait" && waiting.result.status === "queued") await cancelMeanwhile(o, run);
      return waiting;
    }
  }
  const flow = workflow.concurrency;
  if (!flow) return { type: "run" };
  const scope = flowScope(workflow.key, String(flow.key(input)));
  // The slot lasts as long as the lease does now (renewed with it); a lease this process can no
  // longer prove its own (past its expiry by our clock: a pause) takes no slot at all.
  if (clock.now() >= o.grant.expiresAt - expiryMargin(run.leaseTtlMs)) return { type: "wait", result: { status: "lost-lease" } };
  const expiresAt = o.grant.expiresAt;
  if (await enter(o, scope, flow.limit, { runId, at: createdAt }, expiresAt)) return { type: "run", slot: { scope, limit: flow.limit, expiresAt } };
  if (cancelled) {
    // It may have queued in an earlier invocation: out of the queue as it ends.
    await store.dequeue(scope, { runId, at: createdAt });
    return cancelled;
  }
  // Queued: woken when a slot is handed to it (the recheck is the backstop if that wake is lost).
  const now = clock.now();
  const ok = await releaseAs(o, { now, wakeAt: now + QUEUED_RECHECK_MS, waitingFor: waitingInQueue(scope), status: "queued" });
  if (!ok) return { type: "wait", result: { status: "lost-lease" } };
  // In the queue only once it waits: a holder that left while we held the lease passed us over.
  // Then any slot free now goes to the first in line (to us if that is us, woken at once).
  // (The store queues the run only if it still waits so: this invocation's release may have
  // applied long before its answer came, and the run been taken since — by the next invocation,
  // or by a canceller that took it out of the queue and is about to end it — or have ended.)
  await store.enqueue(scope, runId, createdAt);
  await promote(o, scope, flow.limit);
  // The first in line also looks again once every slot held now has had time to expire: a holder
  // that died after its run ended, before freeing its slot, leaves it to expiry, and nothing else
  // wakes the queue then (the recheck is 30 s away; on AWS it is the watchdog's sweep).
  if ((await store.peek(scope))?.runId === runId) {
    await o.wakes.schedule({ runId, at: clock.now() + Math.min(QUEUED_RECHECK_MS, run.leaseTtlMs) + SLOT_EXPIRY_MARGIN_MS, reason: "start", key: "slot-expiry" });
  }
  await cancelMeanwhile(o, run);
  return { type: "wait", result: { status: "queued", scope } };
}

/**
 * A cancellation requested while this invocation held the lease found the run busy, and its wake
 * was dropped: now that the run waits, look once more, and wake it to end (it has run nothing).
 */
async function cancelMeanwhile(o: AdmissionPorts, run: AdmissionRun): Promise<void> {
  if (!run.firstExecution || run.cancelReason !== undefined) return;
  if ((await o.store.getRecord(run.journalId, keys.cancel())) === undefined) return;
  await wakeNow(o, run.runId, "cancel", "cancel");
}
