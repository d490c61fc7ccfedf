/**
 * One invocation of a run, top to bottom: take the lease, load the journal, admit the run (flow
 * control, its own deadline), run the workflow against the journal, and settle how it ended. Each
 * stage asks the run protocol (lib/core/run/) for what it writes; the engine itself writes
 * nothing. Transports (the local host loop, the SQS batch, the test runtime) all call
 * {@link Engine.invoke} with a run id.
 */
import { Execution } from "./execution.ts";
import { LeaseLostError } from "./errors.ts";
import { serializeError } from "./error-codec.ts";
import { type EngineContext, prepare } from "./engine-prepare.ts";
import { abandon, end, settle, wakeOnLapse } from "./engine-settle.ts";
import { checkJournalLimits, DEFAULT_JOURNAL_LIMITS } from "./journal-limits.ts";
import { Payloads } from "./payloads.ts";
import { functionsStopped, giveUpSlot } from "./engine-slot.ts";
import { expiryMargin, heldUntil, type Hold } from "./run/heartbeat.ts";
import { RunProtocol } from "./run/protocol.ts";
import { systemTimers } from "../ports.ts";

export type { EngineHooks, EngineOptions, InvocationResult, InvokeOptions, LogEntry } from "./engine-types.ts";
import type { EngineOptions, InvocationResult, InvokeOptions } from "./engine-types.ts";

/** After a fault, the run is due again this soon (the watchdog's backstop if no wake comes). */
const RETRY_AFTER_FAULT_MS = 5_000;

let engines = 0;

/**
 * The engine: one `invoke(runId)` is one invocation of a run (lease, load, replay, new steps,
 * suspend or finish) over the ports it is given. The runtimes build one; build it by hand only for
 * a transport of your own.
 *
 * @example
 * ```ts
 * const engine = new Engine({ store, wakes, clock: systemClock, workflows: createRegistry([orderFlow]), owner: "worker-1" });
 * const outcome = await engine.invoke("order-8472"); // { status: "suspended", waitingFor: "signal:approval", … }
 * ```
 */
export class Engine {
  private readonly c: EngineContext;
  private invocationSeq = 0;
  /** Tells apart engines given the same owner name in one process (tests do), deterministically. */
  private readonly instance = (++engines).toString(36);

  constructor(private readonly o: EngineOptions) {
    const protocol = new RunProtocol({ store: o.store, wakes: o.wakes, clock: o.clock, workflows: o.workflows, remote: o.remote, log: o.log });
    this.c = { o, protocol, ttl: o.leaseTtlMs ?? 30_000, timers: o.timers ?? systemTimers, payloads: o.payloads ? new Payloads(o.payloads) : undefined };
  }

  /** The run protocol this engine writes through (the client and transports of the same runtime share its ports). */
  get protocol(): RunProtocol {
    return this.c.protocol;
  }

  async invoke(runId: string, options: InvokeOptions = {}): Promise<InvocationResult> {
    const around = this.o.hooks?.invocation;
    return around ? around(runId, options, () => this.invokeNow(runId, options)) : this.invokeNow(runId, options);
  }

  private async invokeNow(runId: string, options: InvokeOptions): Promise<InvocationResult> {
    const { protocol, ttl, timers } = this.c;
    const clock = this.o.clock;
    // 1. The lease. Owners are unique per invocation, so a retried grant recognises itself.
    const owner = `${this.o.owner}:${this.instance}.${(++this.invocationSeq).toString(36)}`;
    const grant = await protocol.grant(runId, owner, ttl, options.mayBreak, options.wakeAt);
    if ("refused" in grant) {
      if (grant.refused === "not-due") return { status: "not-due", wakeAt: grant.run?.wakeAt };
      return { status: grant.refused === "held" ? "busy" : grant.refused };
    }
    const hold: Hold = { grant, lost: false, abandoned: false, counts: { executed: 0, replayed: 0, retries: 0 } };
    const started = clock.now();
    const heartbeat = protocol.heartbeat(timers, ttl, hold);
    const deadline = options.deadline ?? started + (this.o.maxInvocationMs ?? 15 * 60_000);
    try {
      const result = await this.execute(hold, options, deadline);
      const run = grant.run;
      const ended = result.status === "completed" || result.status === "failed";
      this.o.log?.({
        event: "invocation",
        runId,
        workflow: run.workflow,
        token: grant.token,
        outcome: result.status,
        durationMs: clock.now() - started,
        ...hold.counts,
        invocations: run.invocations,
        maxInvocations: this.o.maxInvocations ?? 10_000,
        ...(ended ? { runDurationMs: clock.now() - run.createdAt } : {}),
        ...(result.status === "failed" ? { errorName: result.error.name } : {}),
      });
      return result;
    } catch (err) {
      // A fault (the store, the wake queue): free the run for a retry soon, so a redelivered wake
      // does not find it "busy" until the lease expires. Best effort. Not while a step function
      // of it still runs (a sibling of the step whose write failed): the next invocation would
      // start that same attempt beside it. The lease then lapses at its expiry, woken then.
      if (!hold.lost && !hold.abandoned) {
        await giveUpSlot(this.c, hold);
        if (await functionsStopped(this.c, hold)) {
          await protocol.releaseAfterFault(grant, clock.now(), clock.now() + RETRY_AFTER_FAULT_MS).catch(() => false);
        } else {
          await wakeOnLapse(this.c, grant).catch(() => {});
        }
      }
      throw err;
    } finally {
      heartbeat.stop();
      // A slot freed at the end (engine-slot.ts) goes to the first queued run of its key; one not
      // freed (the lease lost, a step function still running) lapses at its expiry.
      if (hold.freedSlot) await protocol.handOnSlot(hold.freedSlot).catch(() => {});
    }
  }

  private async execute(hold: Hold, options: InvokeOptions, deadline: number): Promise<InvocationResult> {
    const { protocol, ttl, timers, payloads } = this.c;
    const { clock } = this.o;
    const g = hold.grant;
    const runId = g.runId;

    // 2. The journal, its workflow and its input (or why this invocation ends before running any).
    const prepared = await prepare(this.c, g);
    if (prepared.type === "end") return prepared.result;
    const { workflow, view, input, journal } = prepared;

    // 3. Admission: the run's own deadline (a cancellation like any other, journaled once, and
    // before admission, so that a run still queued at its deadline ends then), then flow control.
    const runDeadline = workflow.timeoutMs === undefined ? undefined : journal.run.createdAt + workflow.timeoutMs;
    let cancelReason = view.cancel()?.reason;
    if (cancelReason === undefined && runDeadline !== undefined && clock.now() >= runDeadline) {
      cancelReason = await protocol.requestOwnCancel(g, `the run passed its timeout of ${workflow.timeoutMs} ms`);
    }
    const admission = await protocol.admit(g, workflow, { runId, journalId: g.journalId, createdAt: journal.run.createdAt, input, firstExecution: !view.hasRun(), leaseTtlMs: ttl, cancelReason });
    const parent = view.parent();
    if (admission.type === "finish") {
      // Ended before it ran (superseded, or cancelled while queued): a child's parent hears of it first.
      if (parent) await protocol.notifyParent(parent, runId, admission.outcome);
      return end(this.c, g, admission.outcome);
    }
    if (admission.type === "wait") return admission.result;
    if (admission.slot) hold.slot = admission.slot;
    const limit = checkJournalLimits({ ...DEFAULT_JOURNAL_LIMITS, ...this.o.journalLimits }, runId, journal.records, this.o.log, journal.bytes);
    if (limit) return end(this.c, g, { type: "failed", error: serializeError(limit) }, undefined, hold);

    // 4. Run the workflow. Every append can tell it of a cancellation requested meanwhile (at
    // most `cancelProbeMs` after the last time it looked), so none is left to the heartbeat.
    const probeMs = this.o.cancelProbeMs ?? 0;
    let lookedAt = clock.now();
    const execution = new Execution({
      runId,
      journalId: g.journalId,
      incarnation: g.incarnation,
      workflow,
      input,
      journal: view,
      now: () => clock.now(),
      timers,
      append: (record) => {
        if (probeMs === 0) return protocol.append(g, record, true);
        const now = clock.now();
        const probe = now - lookedAt >= probeMs;
        if (probe) lookedAt = now;
        return protocol.append(g, record, probe);
      },
      transact: (record, ops) => protocol.transact(g, record, ops),
      ...(cancelReason === undefined ? {} : { cancelReason }),
      children: protocol.children(g.incarnation),
      // Owned while no renewal was refused, the deadline has not passed, and the lease has not
      // expired by this process's own clock (a process frozen past its lease starts nothing).
      ownsLease: () => !hold.lost && !hold.abandoned && clock.now() < heldUntil(hold) - expiryMargin(ttl),
      invocation: g.run.invocations,
      ...(payloads ? { payloads, maxValueBytes: payloads.maxBytes } : this.o.maxValueBytes === undefined ? {} : { maxValueBytes: this.o.maxValueBytes }),
      ...(options.shouldYield ? { shouldYield: options.shouldYield } : {}),
      ...(this.o.links ? { links: this.o.links } : {}),
      runCreatedAt: journal.run.createdAt,
      onStep: (event) => {
        options.onStep?.(event);
        if (event.outcome === "replayed") hold.counts.replayed++;
        else if (event.outcome === "retrying") hold.counts.retries++;
        else if (event.kind === "run" && (event.outcome === "completed" || event.outcome === "failed")) hold.counts.executed++;
        // The spread last: on Node 20 a property after a spread costs ~0.5 µs (see ExecutionCore.stamp).
        if (event.outcome !== "replayed" && this.o.log) this.o.log({ event: "step", ...event });
      },
      onLog: ({ level, message, stepId, attributes }) => this.o.log?.({ ...attributes, event: "log", level, message, runId, ...(stepId === undefined ? {} : { stepId }) }),
      ...(this.o.hooks?.attempt ? { aroundAttempt: this.o.hooks.attempt } : {}),
    });
    hold.bodiesInFlight = () => execution.bodiesInFlight;
    hold.bodiesSettled = (ms) => execution.bodiesSettled(ms);
    hold.onLost = () => execution.stop(new LeaseLostError(runId, "a lease renewal was refused: another invocation owns the run, or it ended"));
    if (cancelReason === undefined) {
      hold.onCancel = (reason) => {
        hold.onCancel = undefined;
        execution.requestCancel(reason);
      };
    }
    const ran = execution.run();
    let cancelTimer = () => {};
    const overdue = new Promise<"overdue">((resolve) => {
      cancelTimer = timers.after(Math.max(0, deadline - clock.now()), () => resolve("overdue"));
    });
    const outcome = await Promise.race([ran, overdue]).finally(() => cancelTimer());
    if (outcome === "overdue") return abandon(this.c, hold, execution);

    // 5. Settle: how the execution ended becomes the run's next state.
    return settle(this.c, hold, execution, outcome, { view, parent, runDeadline, cancelKnownAtStart: cancelReason !== undefined, createdAt: journal.run.createdAt });
  }
}
