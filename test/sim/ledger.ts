/**
 * What the simulator knows happened, and the invariants checked as it happens:
 *
 * - no step body starts twice (same journal, step and attempt) unless every earlier start of it
 *   was interrupted before its record was written: its worker died, froze or paused, or its
 *   invocation ended (lost its lease, passed its deadline, failed) first; an at-most-once body
 *   never starts twice at all;
 * - no forward step starts in an execution after the run's cancellation was delivered there, nor
 *   after that execution heard from the journal (a load, an answered append) once the
 *   cancellation was written;
 * - no flow-control key has more runs with a forward body running at once, in live invocations,
 *   than its limit;
 * - a cancel that answers "cancelled" (ended now) finds no forward step recorded or running live, and none starts after;
 * - a run's status never changes once terminal.
 *
 * The checks that need the end of the story are in final-checks.ts.
 */
import type { StoredRecord } from "../../lib/ports.ts";
import type { BodyRole } from "./workloads.ts";

export interface Violation {
  kind: string;
  message: string;
}

interface Start {
  worker: string;
  exec: Exec;
  journalId: string;
  stepId: string;
  attempt: number;
  role: BodyRole;
  /** Started, and its record not yet written by its execution. */
  open: boolean;
  /** Its execution was interrupted while it was open. */
  interrupted: boolean;
  running: boolean;
}

export interface Exec {
  id: number;
  worker: string;
  runId: string;
  live: boolean;
  /** The workflow caught the cancellation in this execution. */
  cancelSeen: boolean;
  /** The latest store operation (ledger sequence) whose answer told this execution about the journal. */
  lastSync: number;
}

/** The run a journal id belongs to (`<runId>~<k>` past the first incarnation). */
export function runOf(journalId: string): string {
  const at = journalId.lastIndexOf("~");
  return at < 0 ? journalId : journalId.slice(0, at);
}

export interface SignalAck {
  runId: string;
  signalId: string;
  status: "delivered" | "buffered";
}

export class Ledger {
  violation: Violation | undefined;
  private seq = 0;
  private execSeq = 0;
  private readonly starts = new Map<string, Start[]>();
  private readonly current = new Map<string, Exec>();
  /** When each run's cancellation was first written (ledger sequence). */
  readonly cancelWritten = new Map<string, number>();
  readonly signals: SignalAck[] = [];
  readonly cancels: Array<{ runId: string; answer: unknown }> = [];
  readonly terminal = new Map<string, string>();
  /** Runs a cancel answered "cancelled" for: ended now, with nothing to compensate. */
  private readonly cancelledNow = new Set<string>();

  constructor(private readonly log: (line: string) => void) {}

  fail(kind: string, message: string): void {
    if (this.violation) return;
    this.violation = { kind, message };
    this.log(`VIOLATION ${kind}: ${message}`);
  }

  beginExec(worker: string, runId: string): Exec {
    const exec: Exec = { id: ++this.execSeq, worker, runId, live: true, cancelSeen: false, lastSync: 0 };
    this.current.set(`${worker} ${runId}`, exec);
    return exec;
  }

  /** Invocations begun and not yet ended (a dead worker's end with it). */
  get openExecs(): number {
    return this.current.size;
  }

  endExec(exec: Exec, how: string): void {
    exec.live = false;
    if (this.current.get(`${exec.worker} ${exec.runId}`) === exec) this.current.delete(`${exec.worker} ${exec.runId}`);
    for (const s of this.allStarts()) {
      if (s.exec === exec && s.open) {
        s.interrupted = true;
        s.running = false;
      }
    }
    this.log(`${exec.worker} invocation ${exec.id} of ${exec.runId} ended: ${how}`);
  }

  /** A worker died or froze: its open bodies are interrupted (a frozen one no longer counts as running). */
  interruptWorker(worker: string): void {
    for (const s of this.allStarts()) {
      if (s.worker !== worker) continue;
      if (s.open) s.interrupted = true;
      s.running = false;
    }
  }

  /** The whole machine paused (a clock jump past the heartbeat): every open body is interrupted. */
  pauseAll(): void {
    for (const s of this.allStarts()) if (s.open) s.interrupted = true;
  }

  workerDied(worker: string): void {
    this.interruptWorker(worker);
    for (const [key, exec] of this.current) {
      if (exec.worker === worker) {
        exec.live = false;
        this.current.delete(key);
      }
    }
  }

  /** `caller`: the execution the workflow ran in, when known (see `sync`). */
  sawCancel(worker: string, runId: string, caller?: Exec): void {
    const exec = this.callerOf(worker, runId, caller);
    if (exec) exec.cancelSeen = true;
  }

  bodyStart(worker: string, journalId: string, stepId: string, attempt: number, role: BodyRole): Start | undefined {
    const runId = runOf(journalId);
    const exec = this.current.get(`${worker} ${runId}`);
    if (!exec) {
      this.fail("body-after-invocation", `${worker} started ${journalId}/${stepId} with no invocation of ${runId}`);
      return undefined;
    }
    const key = `${journalId}|${stepId}|${attempt}`;
    const earlier = this.starts.get(key) ?? [];
    const where = `${journalId}/${stepId} attempt ${attempt}`;
    if (role.atMostOnce && earlier.length > 0) this.fail("at-most-once-twice", `${where} (at-most-once) started again by ${worker} (invocation ${exec.id})`);
    const unexcused = earlier.find((s) => !s.interrupted);
    if (unexcused) {
      this.fail("double-start", `${where} started by ${worker} (invocation ${exec.id}) after ${unexcused.worker} (invocation ${unexcused.exec.id}) ${unexcused.open ? "still runs it" : "recorded it"}`);
    }
    if (role.role === "forward") {
      if (this.cancelledNow.has(runId)) this.fail("cancel-answer", `${where}: a forward step started after a cancel answered that ${runId} ended then`);
      if (exec.cancelSeen) this.fail("forward-after-cancel", `${where}: a forward step started in invocation ${exec.id} after its cancellation was delivered there`);
      const written = this.cancelWritten.get(runId);
      if (written !== undefined && exec.lastSync > written) {
        this.fail("cancel-unseen", `${where}: a forward step started in invocation ${exec.id}, which had heard from the journal (op ${exec.lastSync}) after the cancellation was written (op ${written})`);
      }
      if (role.flowKey !== undefined) this.checkLimit(role.flowKey, runId, where);
    }
    const start: Start = { worker, exec, journalId, stepId, attempt, role, open: true, interrupted: false, running: true };
    earlier.push(start);
    this.starts.set(key, earlier);
    return start;
  }

  /**
   * A cancel answered "cancelled": the run ended then, with nothing to compensate — no forward
   * step of it may be recorded, or still running in a live invocation (a body interrupted before
   * its record is the at-least-once gap: the journal never says it ran), nor start later.
   */
  cancelAnswered(runId: string): void {
    this.cancelledNow.add(runId);
    for (const s of this.allStarts()) {
      if (runOf(s.journalId) !== runId || s.role.role !== "forward" || s.interrupted) continue;
      this.fail("cancel-answer", `cancel of ${runId} answered "cancelled now", but ${s.journalId}/${s.stepId} ${s.open ? "runs in a live invocation" : "is recorded"}`);
    }
  }

  bodyEnd(start: Start | undefined): void {
    if (start) start.running = false;
  }

  /**
   * Every store call as it is applied (`answered`: the caller gets this answer); what it returns
   * runs when the answer reaches the caller — what the caller knows, it knows from then on.
   * `caller`: the execution that made the call, when known (see `sync`).
   */
  applied(actor: string, op: string, args: unknown[], answer: unknown, answered: boolean, caller?: Exec): (() => void) | undefined {
    const seq = ++this.seq;
    let learnt: (() => void) | undefined;
    if (op === "appendRecord") {
      const journalId = args[0] as string;
      const record = args[1] as StoredRecord;
      const res = answer as { written: boolean };
      const runId = runOf(journalId);
      if (record.key === "cancel" && res.written && !this.cancelWritten.has(runId)) this.cancelWritten.set(runId, seq);
      if (answered) learnt = () => this.sync(actor, runId, seq, caller);
      const body = record.body as { type?: string; kind?: string; stepId?: string; attempts?: number; attempt?: number };
      if (res.written && body.type === "step" && body.kind === "run" && body.stepId !== undefined) this.close(actor, journalId, body.stepId, body.attempts ?? 0);
      if (res.written && body.type === "attempt" && body.stepId !== undefined) this.close(actor, journalId, body.stepId, body.attempt ?? 0);
    } else if (op === "loadJournal" && answered) {
      learnt = () => this.sync(actor, args[0] as string, seq, caller);
    } else if ((op === "releaseLease" && (answer as { released?: unknown } | undefined)?.released === true) || (op === "continueRun" && answer === true)) {
      // The invocation gave the run up (its lease is free from now, even if the answer is yet to
      // reach it): a body of it that ended unrecorded (its record's write failed) is the
      // at-least-once gap, as if interrupted, and the next holder may run that attempt again.
      const exec = this.current.get(`${actor} ${args[0] as string}`);
      for (const s of this.allStarts()) if (exec && s.exec === exec && s.open && !s.running) s.interrupted = true;
    }
    return learnt;
  }

  /** A run's status after a store call changed its meta record. */
  status(runId: string, status: string): void {
    const before = this.terminal.get(runId);
    if (before !== undefined && before !== status) this.fail("status-changed", `run ${runId} was ${before} and is now ${status}`);
    if (status === "completed" || status === "failed" || status === "cancelled") this.terminal.set(runId, status);
  }

  /**
   * What an answer told goes to the execution that asked. A process may hold an execution of a
   * run beside the run's current one: an invocation that ended (its lease lost, its deadline
   * passed) while a step body still ran, whose record it writes when the body returns. That
   * append's answer (a cancellation, say) is its own, not the next invocation's in the process.
   */
  private sync(actor: string, runId: string, seq: number, caller?: Exec): void {
    const exec = this.callerOf(actor, runId, caller);
    if (exec) exec.lastSync = seq;
  }

  /**
   * The execution of `runId` a call or a hook belongs to: the caller, if known (none if it is an
   * execution of another run: a child writing to its parent's journal tells the parent nothing);
   * otherwise the worker's current one of the run.
   */
  private callerOf(actor: string, runId: string, caller: Exec | undefined): Exec | undefined {
    if (caller) return caller.runId === runId ? caller : undefined;
    return this.current.get(`${actor} ${runId}`);
  }

  private close(actor: string, journalId: string, stepId: string, attempt: number): void {
    for (const s of this.starts.get(`${journalId}|${stepId}|${attempt}`) ?? []) {
      if (s.worker === actor && s.open) s.open = false;
    }
  }

  /**
   * The limit counts runs: a body of the same run still running is not another run of the key (an
   * invocation paused past its lease while its body ran, the run taken by the next: the
   * at-least-once gap the double-start check excuses).
   */
  private checkLimit(flowKey: string, runId: string, where: string): void {
    const running = [...this.allStarts()].filter((s) => s.running && s.role.flowKey === flowKey && s.exec.live && runOf(s.journalId) !== runId);
    if (running.length >= 1) this.fail("limit-exceeded", `${where}: a body of ${flowKey} (limit 1) started while ${running.map((s) => `${s.journalId}/${s.stepId}@${s.attempt} (${s.worker}, invocation ${s.exec.id}${s.open ? ", open" : ""}${s.interrupted ? ", interrupted" : ""})`).join(", ")} ran`);
  }

  private *allStarts(): Iterable<Start> {
    for (const list of this.starts.values()) yield* list;
  }
}
