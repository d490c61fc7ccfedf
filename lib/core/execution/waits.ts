/**
 * The step kinds that wait. `step.sleep`/`sleepUntil`: a durable timer, ended early by the run's
 * cancellation or by a wake-now (`client.wake`), either journaled as the sleep's resolution so
 * replay agrees. `step.waitForSignal`: resolved by a signal (buffered before the wait, or
 * delivered while it waits), its timeout, or the run's cancellation — whichever writes the
 * wait's write-once resolution first — and, with `notify`, a capability link handed out once.
 */
import type { WaitOptions, WaitResult } from "../definition.ts";
import { parseDuration } from "../duration.ts";
import { WorkflowDefinitionError } from "../errors.ts";
import type { Blocker } from "../execution-types.ts";
import { Later } from "../lazy.ts";
import type { ResolutionRecord, StepRecord, Unstamped } from "../records.ts";
import type { StandardSchemaV1 } from "../standard-schema.ts";
import { parse } from "../validate.ts";
import { resultOf } from "./core.ts";
import { never } from "./never.ts";
import { runStepWithId } from "./run-step.ts";
import type { Scope } from "./scope.ts";

/** `step.sleep` (a duration from now) and `step.sleepUntil` (a moment), in `scope`. */
export async function sleep(scope: Scope, name: string, wakeAtIfNew: (now: number) => number): Promise<void> {
  const core = scope.core;
  const o = core.o;
  const stepId = scope.nextId(name);
  if (core.done || core.fatal) return never(); // ended, or the code already diverged from the journal
  const recorded = o.journal.step(stepId);
  if (recorded && recorded.kind !== "sleep") return core.nondeterminism(stepId, `a ${recorded.kind} step`, "a sleep step");
  let wakeAt: number;
  // When a new sleep began (its record is written later, at suspension: its `at` comes after).
  let startedAt = 0;
  if (recorded) wakeAt = recorded.wakeAt;
  else {
    if (o.replayOnly) return core.frontier(scope, stepId, "sleep");
    startedAt = o.now();
    wakeAt = wakeAtIfNew(startedAt);
  }
  const resolved = o.journal.resolution(stepId)?.via;
  if (resolved === "cancelled") {
    core.cancellation.markDelivered();
    throw core.cancellation.error();
  }
  // Woken early (`client.wake`): the sleep is over, as if its time had come.
  if (resolved === "woken") {
    core.emit({ stepId, kind: "sleep", outcome: "replayed" });
    return;
  }
  if (o.now() < wakeAt && core.cancelStops() && !o.replayOnly) {
    // Delivered here: the sleep ends early with the cancellation (journaled, so replay agrees).
    if (!recorded) await core.write({ type: "step", kind: "sleep", stepId, wakeAt, startedAt });
    const { record } = await core.write<ResolutionRecord>({ type: "resolution", stepId, via: "cancelled" }, "adopt");
    if (record.via === "cancelled") {
      core.cancelledWakes.push(`sleep:${stepId}`); // its wake is pointless now
      core.cancellation.markDelivered();
      throw core.cancellation.error();
    }
    if (record.via === "woken") return; // a wake-now got there first
  }
  if (o.now() >= wakeAt) {
    if (!recorded) await core.write({ type: "step", kind: "sleep", stepId, wakeAt, startedAt });
    else if (core.cancelStops() && !o.replayOnly) {
      // Its time has passed, and the run is being cancelled: an older invocation, paused past its
      // lease, may have decided before then to end this sleep with the cancellation and write
      // that resolution late — replay would stop here where this invocation went on (simulator
      // seed 1281796203). So the sleep's end is journaled too, as a wake (its meaning: the sleep
      // is over): write-once, whichever lands first decides, live and on every replay.
      const { record } = await core.write<ResolutionRecord>({ type: "resolution", stepId, via: "woken" }, "adopt");
      if (record.via === "cancelled") {
        core.cancellation.markDelivered();
        throw core.cancellation.error();
      }
    }
    core.emit({ stepId, kind: "sleep", outcome: recorded ? "replayed" : "completed" });
    return;
  }
  const blocker: Blocker = { stepId, wakeAt, key: `sleep:${stepId}`, reason: "sleep", waitingFor: `sleep:${stepId}` };
  if (!recorded) blocker.record = { type: "step", kind: "sleep", stepId, wakeAt, startedAt };
  return core.block(scope, blocker);
}

/** `step.waitForSignal(name, options)` in `scope`: the signal's schema comes from `durable({ signals })`. */
export function waitForSignal(scope: Scope, name: string, options: WaitOptions | undefined): Promise<WaitResult<unknown> | Later<WaitResult<unknown>>> {
  const workflow = scope.core.o.workflow;
  const stepId = scope.nextId(name);
  const schema = Object.hasOwn(workflow.signals, name) ? workflow.signals[name] : undefined;
  if (!schema) {
    const declared = Object.keys(workflow.signals);
    throw new WorkflowDefinitionError(`workflow "${workflow.name}" waits for signal "${name}" but does not declare it in durable({ signals })${declared.length ? ` (it declares ${declared.join(", ")})` : ""}`);
  }
  return waitWithId(scope, stepId, name, schema, options);
}

/** A wait with its id and schema decided: user signals, and a child run's outcome (children.ts). */
export async function waitWithId(scope: Scope, stepId: string, name: string, schema: StandardSchemaV1, options: WaitOptions | undefined): Promise<WaitResult<unknown> | Later<WaitResult<unknown>>> {
  const core = scope.core;
  const o = core.o;
  const timeoutMs = options?.timeout === undefined ? undefined : parseDuration(options.timeout);
  if (core.done || core.fatal) return never(); // ended, or the code already diverged from the journal
  core.visited.add(stepId);
  const recorded = o.journal.step(stepId);
  if (recorded && recorded.kind !== "wait") return core.nondeterminism(stepId, `a ${recorded.kind} step`, "a wait step");
  if (!recorded && o.replayOnly) return core.frontier(scope, stepId, "wait");
  // The link step belongs to its wait: once the wait is decided, replay no longer calls notify.
  const notified = recorded ? o.journal.step(`${stepId}:notify`) : undefined;
  if (notified) {
    core.visited.add(notified.stepId);
    // A link that could not be sent failed the wait; a signal that came later changes nothing.
    if (notified.kind === "run" && notified.status === "failed") return resultOf(notified);
  }
  const timeoutAt = recorded ? recorded.timeoutAt : timeoutMs === undefined ? undefined : o.now() + timeoutMs;

  let resolution = o.journal.resolution(stepId);
  let adopted = false;
  if (!resolution) {
    const buffered = o.journal.bufferedSignals(name, stepId).find((s) => !core.claimedSignals.has(s.signalId));
    const timedOut = timeoutAt !== undefined && o.now() >= timeoutAt;
    if (!buffered && !timedOut && core.cancelStops() && !o.replayOnly) {
      // Delivered here, unless a signal or the timeout decided the wait first.
      if (!recorded) await core.write({ type: "step", kind: "wait", stepId, signal: name, ...(timeoutAt === undefined ? {} : { timeoutAt }) });
      const written = await core.write<ResolutionRecord>({ type: "resolution", stepId, via: "cancelled" }, "adopt");
      resolution = written.record;
      adopted = !written.won;
      if (resolution.via === "cancelled" && timeoutAt !== undefined) core.cancelledWakes.push(`timeout:${stepId}`);
    } else if (buffered || timedOut) {
      if (buffered) core.claimedSignals.add(buffered.signalId);
      if (!recorded) await core.write({ type: "step", kind: "wait", stepId, signal: name, ...(timeoutAt === undefined ? {} : { timeoutAt }), ...summaryOf(options) });
      const ours: Unstamped<ResolutionRecord> = buffered ? { type: "resolution", stepId, via: "signal", signalId: buffered.signalId } : { type: "resolution", stepId, via: "timeout" };
      const written = await core.write<ResolutionRecord>(ours, "adopt");
      resolution = written.record;
      adopted = !written.won;
      if (buffered && resolution.signalId !== buffered.signalId) core.claimedSignals.delete(buffered.signalId);
      if (resolution.via === "signal" && recorded?.timeoutAt !== undefined) core.cancelledWakes.push(`timeout:${stepId}`);
      core.emit({ stepId, kind: "wait", outcome: "resolved" });
    }
  } else {
    core.emit({ stepId, kind: "wait", outcome: "replayed" });
  }
  if (resolution) {
    if (resolution.via === "cancelled") {
      core.cancellation.markDelivered();
      throw core.cancellation.error();
    }
    if (resolution.via === "timeout" || resolution.via === "woken") return { received: false };
    const signal = resolution.signalId === undefined ? undefined : o.journal.signal(resolution.signalId);
    if (!signal && adopted) {
      // We lost the race to a signal delivered after our journal was loaded: read it next time.
      return core.continueNow(scope, stepId, `signal:${name}`);
    }
    if (!signal) return core.nondeterminism(stepId, `a resolution by signal ${resolution.signalId} with no such signal`, "a wait");
    const sender = signal.sender ? { sender: signal.sender } : {};
    if (signal.payloadRef) {
      const payload = core.later<unknown>(signal.payloadRef);
      return new Later(async () => ({ received: true as const, payload: parse(schema, await payload.load()), signalId: signal.signalId, ...sender }));
    }
    return { received: true, payload: parse(schema, signal.payload), signalId: signal.signalId, ...sender };
  }
  const waitRecord: Unstamped<StepRecord> = { type: "step", kind: "wait", stepId, signal: name, ...(timeoutAt === undefined ? {} : { timeoutAt }), ...summaryOf(options) };
  let written = recorded !== undefined;
  if (options?.notify) {
    // The wait is recorded before its link goes out, so the link always points at a real wait.
    // Its record's time is when the link's lifetime starts: the same on every replay.
    const issuedAt = recorded ? recorded.at : (await core.write(waitRecord)).record.at;
    written = true;
    await notify(scope, stepId, name, timeoutAt, issuedAt, options);
  }
  const blocker: Blocker = { stepId, key: `timeout:${stepId}`, reason: "timeout", waitingFor: `signal:${name}`, signal: name };
  if (timeoutAt !== undefined) blocker.wakeAt = timeoutAt;
  if (!written) blocker.record = waitRecord;
  return core.block(scope, blocker);
}

/**
 * Hands the approvers capability links, once: a journaled step with an id derived from the
 * wait's. One link for anyone, or one per named approver.
 */
async function notify(scope: Scope, waitId: string, signal: string, timeoutAt: number | undefined, issuedAt: number, options: WaitOptions): Promise<void> {
  const core = scope.core;
  const o = core.o;
  const links = o.links;
  const send = options.notify;
  if (!core.ownsLease() || !send) return never();
  if (!links) throw new WorkflowDefinitionError(`wait "${waitId}" asks for an approval link, but this runtime has no webhook secret configured`);
  const approvers = options.approvers === undefined ? [undefined] : checkApprovers(waitId, options.approvers);
  const minted = approvers.map((approver) => {
    const claims = { runId: o.runId, waitId, signal, runCreatedAt: o.runCreatedAt, issuedAt, ...(timeoutAt === undefined ? {} : { expiresAt: timeoutAt }) };
    const { token, url, expiresAt } = links.mint(approver === undefined ? claims : { ...claims, approver });
    return { runId: o.runId, waitId, token, url, expiresAt, ...(approver === undefined ? {} : { approver }) };
  });
  await runStepWithId(
    scope,
    `${waitId}:notify`,
    async () => {
      for (const link of minted) await send(link);
      return null;
    },
    undefined,
    false,
  );
}

/** The wait's `summary`, checked: a short text for the approver's page. */
function summaryOf(options: WaitOptions | undefined): { summary?: string } {
  const summary = options?.summary;
  if (summary === undefined) return {};
  if (typeof summary !== "string" || summary.length > MAX_SUMMARY_LENGTH) throw new WorkflowDefinitionError(`a wait's summary must be a string of at most ${MAX_SUMMARY_LENGTH} characters`);
  return { summary };
}

const MAX_SUMMARY_LENGTH = 2000;

/** Approvers must be distinct, non-empty names; a mistake here is the workflow's, not the run's. */
function checkApprovers(waitId: string, approvers: readonly string[]): string[] {
  const list = [...approvers];
  const bad = list.some((a) => typeof a !== "string" || a.length === 0 || a.length > 256);
  if (list.length === 0 || bad || new Set(list).size !== list.length) {
    throw new WorkflowDefinitionError(`wait "${waitId}": approvers must be a non-empty list of distinct names of 1-256 characters`);
  }
  return list;
}
