/**
 * The step kinds that wait — `step.sleep`, `step.waitForSignal` (with its approval links) — and
 * the values by reference that replay reads lazily. `step.run` and the kinds built on it are in
 * execution.ts; the machinery (writing, blocking, deciding the end) in execution-state.ts.
 */
import type { StepRunContext, StepRunOptions, WaitOptions, WaitResult } from "./definition.ts";
import { parseDuration } from "./duration.ts";
import type { StandardSchemaV1 } from "./standard-schema.ts";
import { WorkflowDefinitionError } from "./errors.ts";
import { ExecutionState, never, resultOf } from "./execution-state.ts";
import type { Blocker } from "./execution-types.ts";
import { Later } from "./lazy.ts";
import { loadRef } from "./payloads.ts";
import type { PayloadRef } from "../ports.ts";
import type { ResolutionRecord, StepRecord, Unstamped } from "./records.ts";
import { parse } from "./validate.ts";

export abstract class WaitingExecution extends ExecutionState {
  private readonly claimedSignals = new Set<string>();

  /** Runs a journaled step (execution.ts): `ordered: false` for steps no code awaits in order. */
  protected abstract runStepWithId<T>(stepId: string, fn: (ctx: StepRunContext) => Promise<T> | T, options?: StepRunOptions, ordered?: boolean): Promise<T | Later<T>>;

  // ---- step.sleep -----------------------------------------------------------------------

  protected async sleep(name: string, wakeAtIfNew: () => number): Promise<void> {
    const stepId = this.nextId(name);
    if (this.done || this.fatal) return never(); // ended, or the code already diverged from the journal
    const recorded = this.o.journal.step(stepId);
    if (recorded && recorded.kind !== "sleep") return this.nondeterminism(stepId, `a ${recorded.kind} step`, "a sleep step");
    let wakeAt: number;
    if (recorded) {
      this.visited.add(stepId);
      wakeAt = recorded.wakeAt;
    } else {
      if (this.o.replayOnly) return this.frontier(stepId, "sleep");
      wakeAt = wakeAtIfNew();
      if (!Number.isFinite(wakeAt)) throw new WorkflowDefinitionError(`sleep "${stepId}": invalid wake time`);
    }
    if (this.o.journal.resolution(stepId)?.via === "cancelled") {
      this.cancellation.markDelivered();
      throw this.cancellation.error();
    }
    if (this.o.now() < wakeAt && this.cancelStops() && !this.o.replayOnly) {
      // Delivered here: the sleep ends early with the cancellation (journaled, so replay agrees).
      if (!recorded) await this.write({ type: "step", kind: "sleep", stepId, wakeAt });
      const { record } = await this.write<ResolutionRecord>({ type: "resolution", stepId, via: "cancelled" }, "adopt");
      if (record.via === "cancelled") {
        this.cancelledWakes.push(`sleep:${stepId}`); // its wake is pointless now
        this.cancellation.markDelivered();
        throw this.cancellation.error();
      }
    }
    if (this.o.now() >= wakeAt) {
      if (!recorded) await this.write({ type: "step", kind: "sleep", stepId, wakeAt });
      this.emit({ stepId, kind: "sleep", outcome: recorded ? "replayed" : "completed" });
      return;
    }
    const blocker: Blocker = { stepId, wakeAt, key: `sleep:${stepId}`, reason: "sleep", waitingFor: `sleep:${stepId}` };
    if (!recorded) blocker.record = { type: "step", kind: "sleep", stepId, wakeAt };
    return this.block(blocker);
  }

  // ---- step.waitForSignal ---------------------------------------------------------------

  protected async wait(name: string, options: WaitOptions | undefined): Promise<WaitResult<unknown> | Later<WaitResult<unknown>>> {
    const stepId = this.nextId(name);
    const schema = Object.hasOwn(this.o.workflow.signals, name) ? this.o.workflow.signals[name] : undefined;
    if (!schema) throw new WorkflowDefinitionError(`workflow "${this.o.workflow.name}" waits for signal "${name}" but does not declare it in durable({ signals })`);
    return this.waitWithId(stepId, name, schema, options);
  }

  /** A wait with its id and schema decided: user signals, and a child run's outcome (children.ts). */
  protected async waitWithId(stepId: string, name: string, schema: StandardSchemaV1, options: WaitOptions | undefined): Promise<WaitResult<unknown> | Later<WaitResult<unknown>>> {
    const timeoutMs = options?.timeout === undefined ? undefined : parseDuration(options.timeout);
    if (this.done || this.fatal) return never(); // ended, or the code already diverged from the journal
    const recorded = this.o.journal.step(stepId);
    if (recorded && recorded.kind !== "wait") return this.nondeterminism(stepId, `a ${recorded.kind} step`, "a wait step");
    if (recorded) this.visited.add(stepId);
    else if (this.o.replayOnly) return this.frontier(stepId, "wait");
    // The link step belongs to its wait: once the wait is decided, replay no longer calls notify.
    const notified = recorded ? this.o.journal.step(`${stepId}:notify`) : undefined;
    if (notified) {
      this.visited.add(notified.stepId);
      // A link that could not be sent failed the wait; a signal that came later changes nothing.
      if (notified.kind === "run" && notified.status === "failed") return resultOf(notified);
    }
    const timeoutAt = recorded ? recorded.timeoutAt : timeoutMs === undefined ? undefined : this.o.now() + timeoutMs;

    let resolution = this.o.journal.resolution(stepId);
    let adopted = false;
    if (!resolution) {
      const buffered = this.o.journal.bufferedSignals(name, stepId).find((s) => !this.claimedSignals.has(s.signalId));
      const timedOut = timeoutAt !== undefined && this.o.now() >= timeoutAt;
      if (!buffered && !timedOut && this.cancelStops() && !this.o.replayOnly) {
        // Delivered here, unless a signal or the timeout decided the wait first.
        if (!recorded) await this.write({ type: "step", kind: "wait", stepId, signal: name, ...(timeoutAt === undefined ? {} : { timeoutAt }) });
        const written = await this.write<ResolutionRecord>({ type: "resolution", stepId, via: "cancelled" }, "adopt");
        resolution = written.record;
        adopted = !written.won;
        if (resolution.via === "cancelled" && timeoutAt !== undefined) this.cancelledWakes.push(`timeout:${stepId}`);
      } else if (buffered || timedOut) {
        if (buffered) this.claimedSignals.add(buffered.signalId);
        if (!recorded) await this.write({ type: "step", kind: "wait", stepId, signal: name, ...(timeoutAt === undefined ? {} : { timeoutAt }), ...summaryOf(options) });
        const ours: Unstamped<ResolutionRecord> = buffered ? { type: "resolution", stepId, via: "signal", signalId: buffered.signalId } : { type: "resolution", stepId, via: "timeout" };
        const written = await this.write<ResolutionRecord>(ours, "adopt");
        resolution = written.record;
        adopted = !written.won;
        if (buffered && resolution.signalId !== buffered.signalId) this.claimedSignals.delete(buffered.signalId);
        if (resolution.via === "signal" && recorded?.timeoutAt !== undefined) this.cancelledWakes.push(`timeout:${stepId}`);
        this.emit({ stepId, kind: "wait", outcome: "resolved" });
      }
    } else {
      this.emit({ stepId, kind: "wait", outcome: "replayed" });
    }
    if (resolution) {
      if (resolution.via === "cancelled") {
        this.cancellation.markDelivered();
        throw this.cancellation.error();
      }
      if (resolution.via === "timeout") return { received: false };
      const signal = resolution.signalId === undefined ? undefined : this.o.journal.signal(resolution.signalId);
      if (!signal && adopted) {
        // We lost the race to a signal delivered after our journal was loaded: read it next time.
        return this.continueNow(stepId, `signal:${name}`);
      }
      if (!signal) return this.nondeterminism(stepId, `a resolution by signal ${resolution.signalId} with no such signal`, "a wait");
      const sender = signal.sender ? { sender: signal.sender } : {};
      if (signal.payloadRef) {
        const payload = this.later<unknown>(signal.payloadRef);
        return new Later(async () => ({ received: true as const, payload: parse(schema, await payload.load()), signalId: signal.signalId, ...sender }));
      }
      return { received: true, payload: parse(schema, signal.payload), signalId: signal.signalId, ...sender };
    }
    const waitRecord: Unstamped<StepRecord> = { type: "step", kind: "wait", stepId, signal: name, ...(timeoutAt === undefined ? {} : { timeoutAt }), ...summaryOf(options) };
    let written = recorded !== undefined;
    if (options?.notify) {
      // The wait is recorded before its link goes out, so the link always points at a real wait.
      // Its record's time is when the link's lifetime starts: the same on every replay.
      const issuedAt = recorded ? recorded.at : (await this.write(waitRecord)).record.at;
      written = true;
      await this.notify(stepId, name, timeoutAt, issuedAt, options);
    }
    const blocker: Blocker = { stepId, key: `timeout:${stepId}`, reason: "timeout", waitingFor: `signal:${name}`, signal: name };
    if (timeoutAt !== undefined) blocker.wakeAt = timeoutAt;
    if (!written) blocker.record = waitRecord;
    return this.block(blocker);
  }

  /**
   * Hands the approvers capability links, once: a journaled step with an id derived from the
   * wait's. One link for anyone, or one per named approver.
   */
  private async notify(waitId: string, signal: string, timeoutAt: number | undefined, issuedAt: number, options: WaitOptions): Promise<void> {
    const links = this.o.links;
    const notify = options.notify;
    if (!this.ownsLease() || !notify) return never();
    if (!links) throw new WorkflowDefinitionError(`wait "${waitId}" asks for an approval link, but this runtime has no webhook secret configured`);
    const approvers = options.approvers === undefined ? [undefined] : checkApprovers(waitId, options.approvers);
    const minted = approvers.map((approver) => {
      const claims = { runId: this.o.runId, waitId, signal, runCreatedAt: this.o.runCreatedAt, issuedAt, ...(timeoutAt === undefined ? {} : { expiresAt: timeoutAt }) };
      const { token, url, expiresAt } = links.mint(approver === undefined ? claims : { ...claims, approver });
      return { runId: this.o.runId, waitId, token, url, expiresAt, ...(approver === undefined ? {} : { approver }) };
    });
    await this.runStepWithId(
      `${waitId}:notify`,
      async () => {
        for (const link of minted) await notify(link);
        return null;
      },
      undefined,
      false,
    );
  }

  // ---- values by reference (payloads.ts) ------------------------------------------------

  /**
   * Stores a step result over the inline threshold and returns its reference; `undefined` keeps
   * it inline. A store that fails aborts the invocation (user code never sees it) and answers
   * `null`: the transport retries the wake and the step runs again, as after a crash.
   */
  protected async offload(value: unknown): Promise<PayloadRef | undefined | null> {
    const payloads = this.o.payloads;
    if (!payloads) return undefined;
    try {
      return await payloads.offload(this.o.runId, this.o.runCreatedAt, value);
    } catch (err) {
      this.abort(err, false);
      return null;
    }
  }

  /**
   * A recorded value to read when the code awaits it. The read holds the execution open like a
   * running step. A fault ends the invocation instead of reaching user code: a missing or altered
   * object fails the run (the engine sees `PayloadMissingError`/`PayloadIntegrityError`), a store
   * that cannot be reached is retried with the wake.
   */
  protected later<T>(ref: PayloadRef): Later<T> {
    return new Later<T>(async () => {
      this.inflight++;
      try {
        return (await loadRef(this.o.payloads, ref)) as T;
      } catch (err) {
        this.abort(err, false);
        return never<T>();
      } finally {
        this.inflight--;
        this.checkQuiescent();
      }
    });
  }
}

/** Approvers must be distinct, non-empty names; a mistake here is the workflow's, not the run's. */
/** The wait's `summary`, checked: a short text for the approver's page. */
function summaryOf(options: WaitOptions | undefined): { summary?: string } {
  const summary = options?.summary;
  if (summary === undefined) return {};
  if (typeof summary !== "string" || summary.length > MAX_SUMMARY_LENGTH) throw new WorkflowDefinitionError(`a wait's summary must be a string of at most ${MAX_SUMMARY_LENGTH} characters`);
  return { summary };
}

const MAX_SUMMARY_LENGTH = 2000;

function checkApprovers(waitId: string, approvers: readonly string[]): string[] {
  const list = [...approvers];
  const bad = list.some((a) => typeof a !== "string" || a.length === 0 || a.length > 256);
  if (list.length === 0 || bad || new Set(list).size !== list.length) {
    throw new WorkflowDefinitionError(`wait "${waitId}": approvers must be a non-empty list of distinct names of 1-256 characters`);
  }
  return list;
}
