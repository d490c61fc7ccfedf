import type { StoredRecord } from "../ports.ts";
import { lateDeliveries, type Placement, type RecordedDelivery } from "./delivery-order.ts";
import type { AttemptRecord, JournalRecord, ResolutionRecord, SignalRecord, StepRecord, CancelRecord, ParentRecord } from "./records.ts";
import { parseRecord } from "./records.ts";

/**
 * The records a signal's deliverer reads (`JournalView.parse`'s `only`): waits and sleeps, their
 * resolutions, the signals. Not the steps that ran, their attempts and start markers: in a long
 * run those are nearly all of the journal, and the invocation that replays it checks every one.
 */
export function waitsAndSignals(key: string, body: unknown): boolean {
  if (key.startsWith("step#")) return typeof body !== "object" || body === null || (body as { kind?: unknown }).kind !== "run";
  return key.startsWith("resolution#") || key.startsWith("signal#");
}

/** A signal as the journal holds it, with its audit mark. */
export type JournaledSignal = SignalRecord & { lateFor?: string };

/**
 * A run's journal, parsed and indexed for replay. Parsing every record up front means a record
 * this code cannot read fails the invocation before any user code runs.
 */
export class JournalView {
  private readonly steps = new Map<string, StepRecord>();
  private readonly attemptsByStep = new Map<string, AttemptRecord[]>();
  private readonly resolutions = new Map<string, ResolutionRecord>();
  private readonly signals = new Map<string, JournaledSignal>();
  private readonly marks = new Map<string, number>();
  private readonly consumed = new Set<string>();
  private readonly startsByStep = new Map<string, number[]>();
  private readonly placements = new Map<string, Placement>();
  private late: ReturnType<typeof lateDeliveries> | undefined;
  private lastInv: number | undefined;
  private lastInvSuspended = false;
  private ownRecords = 0;
  private cancelRecord: CancelRecord | undefined;
  private parentRecord: ParentRecord | undefined;
  private buffered: JournaledSignal[] | undefined;

  /**
   * Throws `JournalFormatError` naming the first unreadable record. With `only`, the records it
   * refuses are neither read nor checked (see {@link waitsAndSignals}).
   */
  static parse(runId: string, stored: readonly StoredRecord[], only?: (key: string, body: unknown) => boolean): JournalView {
    const view = new JournalView();
    for (const s of stored) if (only === undefined || only(s.key, s.body)) view.add(s.checked ? (s.body as JournalRecord) : parseRecord(runId, s.key, s.body), s.lateFor);
    return view;
  }

  private add(record: JournalRecord, lateFor: string | undefined): void {
    if (record.marks) for (const [k, v] of Object.entries(record.marks)) this.marks.set(k, v);
    if (record.type !== "signal" && record.type !== "delivery") this.ownRecords++;
    if (record.inv !== undefined && record.type !== "signal") {
      if (this.lastInv === undefined || record.inv > this.lastInv) {
        this.lastInv = record.inv;
        this.lastInvSuspended = false;
      }
      // A sleep or wait announced, or a retry scheduled: that invocation suspended there.
      if (record.inv === this.lastInv && (record.type === "attempt" || (record.type === "step" && record.kind !== "run"))) this.lastInvSuspended = true;
    }
    switch (record.type) {
      case "cancel":
        this.cancelRecord = record;
        break;
      case "parent":
        this.parentRecord = record;
        break;
      case "start": {
        const list = this.startsByStep.get(record.stepId) ?? [];
        list.push(record.attempt);
        this.startsByStep.set(record.stepId, list.sort((a, b) => a - b));
        break;
      }
      case "step":
        this.steps.set(record.stepId, record);
        break;
      case "attempt": {
        const list = this.attemptsByStep.get(record.stepId) ?? [];
        list.push(record);
        list.sort((a, b) => a.attempt - b.attempt);
        this.attemptsByStep.set(record.stepId, list);
        break;
      }
      case "resolution":
        this.resolutions.set(record.stepId, record);
        if (record.signalId !== undefined) this.consumed.add(record.signalId);
        break;
      case "signal":
        this.signals.set(record.signalId, lateFor === undefined ? record : { ...record, lateFor });
        break;
      case "place":
        this.placements.set(record.stepId, { seq: record.seq, inv: record.inv ?? 0 });
        break;
    }
  }

  step(stepId: string): StepRecord | undefined {
    return this.steps.get(stepId);
  }

  /**
   * Every recorded `run` step that has a delivery position (`seq`), with its writer and write
   * time; a result that landed late at its place (delivery-order.ts), journaled or not yet.
   */
  deliveries(): RecordedDelivery[] {
    return this.lateOnes().deliveries;
  }

  /** Late results with no journaled place yet: the `place` records to write before any code runs. */
  unplaced(): ReadonlyArray<{ stepId: string; seq: number }> {
    return this.lateOnes().unplaced;
  }

  private lateOnes(): ReturnType<typeof lateDeliveries> {
    if (this.late) return this.late;
    const recorded: RecordedDelivery[] = [];
    for (const s of this.steps.values()) if (s.kind === "run" && s.seq !== undefined) recorded.push({ seq: s.seq, inv: s.inv ?? 0, at: s.at, stepId: s.stepId });
    this.late = lateDeliveries(recorded, this.placements);
    return this.late;
  }

  /** Ids of every recorded step (`run`, `sleep`, `wait`). */
  stepIds(): string[] {
    return [...this.steps.keys()];
  }

  /** Whether any step ran here: a step recorded, or an attempt of one failed or started. */
  hasRun(): boolean {
    return this.steps.size > 0 || this.attemptsByStep.size > 0 || this.startsByStep.size > 0;
  }

  /** Ids of steps with failed (`attempt`) or started (`start`) attempts recorded. */
  attemptedStepIds(): string[] {
    return [...new Set([...this.attemptsByStep.keys(), ...this.startsByStep.keys()])];
  }

  attempts(stepId: string): readonly AttemptRecord[] {
    return this.attemptsByStep.get(stepId) ?? [];
  }

  /** The parent of a child run (`step.invoke`), if this run is one. */
  parent(): ParentRecord | undefined {
    return this.parentRecord;
  }

  /** The run's cancellation request, if one was made. */
  cancel(): CancelRecord | undefined {
    return this.cancelRecord;
  }

  /** Attempts of an at-most-once step whose body was started, ascending. */
  starts(stepId: string): readonly number[] {
    return this.startsByStep.get(stepId) ?? [];
  }

  /**
   * Invocations before `current` that may have run a step body the journal has no record of:
   * those since the last one that wrote a record (itself included, unless it wrote a sleep, a
   * wait or a retry, i.e. suspended). An upper bound: an invocation that found nothing to do (an
   * early wake) counts too. Undefined for journals written before records carried `inv`. Signals
   * come from outside and do not count as the run's own records.
   */
  possibleReruns(current: number): number | undefined {
    // Nothing recorded yet: every earlier invocation may have died inside the first step.
    if (this.ownRecords === 0) return Math.max(0, current - 1);
    if (this.lastInv === undefined) return undefined;
    return Math.max(0, current - this.lastInv - (this.lastInvSuspended ? 1 : 0));
  }

  resolution(stepId: string): ResolutionRecord | undefined {
    return this.resolutions.get(stepId);
  }

  signal(signalId: string): JournaledSignal | undefined {
    return this.signals.get(signalId);
  }

  /**
   * Signals of this name that no wait consumed and none came too late for, oldest first. A
   * signal sent to one wait is only ever offered to that wait (`forWait`), never to a later one.
   */
  bufferedSignals(name: string, forWait?: string): JournaledSignal[] {
    this.buffered ??= [...this.signals.values()]
      .filter((s) => !this.consumed.has(s.signalId) && s.lateFor === undefined)
      .sort((a, b) => a.at - b.at || (a.signalId < b.signalId ? -1 : 1));
    return this.buffered.filter((s) => s.name === name && (s.waitId === undefined || s.waitId === forWait));
  }

  /** Signals no wait consumed and none came too late for, in write order (they move to a next incarnation). */
  unconsumedSignals(): SignalRecord[] {
    return [...this.signals.values()]
      .filter((s) => !this.consumed.has(s.signalId) && s.lateFor === undefined)
      .sort((a, b) => a.at - b.at)
      .map(({ lateFor: _late, ...signal }) => signal);
  }

  /** Waits recorded without a resolution, in journal order. */
  openWaits(): Array<StepRecord & { kind: "wait" }> {
    const open: Array<StepRecord & { kind: "wait" }> = [];
    for (const s of this.steps.values()) if (s.kind === "wait" && !this.resolutions.has(s.stepId)) open.push(s);
    return open.sort((a, b) => a.at - b.at);
  }

  /** The recorded value of the n-th `step.now()`, if any. */
  mark(ordinal: string): number | undefined {
    return this.marks.get(ordinal);
  }
}
