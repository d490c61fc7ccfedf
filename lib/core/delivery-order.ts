/**
 * Delivers step results to the workflow in the order they were first delivered live.
 *
 * Step ids are allocated when a step is called (`save`, `save#2`, …). In concurrent branches a
 * call often follows an `await` of another step, so the order of those calls depends on which
 * step finished first. Live, that is real completion order; on replay, recorded results would
 * all be ready at once. So every `run` record carries `seq`, the position of its delivery in its
 * scope, and replay releases recorded results in that order, letting each continuation run (a
 * macrotask) before the next result is released. Sequential code never waits: the next result
 * is always the one it asks for.
 *
 * The order is derived from the records alone, whatever interleaving wrote them. Two
 * invocations of one run can both write (a process frozen past its lease, a zombie Lambda): the
 * one that lost its lease only ends bodies that were running (it starts nothing more), and such
 * a late record may land after the invocation holding the lease loaded the journal. The holder
 * never delivered it: it went on without it, and replay must go the way it went. An invocation
 * numbers its positions from one past the largest it loaded, so a record is late for a later
 * invocation exactly when that invocation wrote a position at or before the record's own (it
 * had not loaded it). A late record is delivered after every recorded position, as a result
 * that arrives now (simulator seeds 177154612 and 2013304793: a zombie's step at the position of
 * the holder's cancelled sibling, and before the holder's compensations).
 *
 * Where that position is, is decided once: the invocation that finds a late record journals its
 * place (`place#<stepId>`, see {@link lateDeliveries}) before it runs any code, so an invocation
 * that loaded the journal before the late record landed, and wrote positions past it, is not
 * misread as having delivered it.
 *
 * That rule cannot see a straddle: one invocation's concurrent writes landing out of order
 * around another's load. The zombie took 1 (`a`) and 2 (`b`); `b` lands, the holder loads (`b`
 * at 2, nothing at 1) and numbers from 3; then `a` lands at 1. No later invocation wrote a
 * position at or before 1, so replay delivers `a` first: the holder must not have gone on from
 * `b`. Positions are numbered from 1 with none skipped, so one missing below a recorded one is a
 * write in flight (or lost), and the recorded results above it are held back while a step of
 * that scope runs here unrecorded ({@link DeliveryOrder.running}: a body, a retry not due). The
 * missing position's step was called before them, so the holder runs it too, and the write-once
 * step record decides: the holder's first (at a position of its own, delivered after the held
 * ones; the zombie's write fails), or the zombie's (the holder's write loses, and it ends having
 * delivered nothing above the hole). Nothing more is written; a journal without a hole, or a
 * replay that runs nothing new (a replay-only check), is never held.
 *
 * Still open: two zombies' writes at one position. K's write of `q` at 1 is in flight when I
 * loads; I takes 1 for `r`, its write in flight too; `q` lands, the next holder loads `q` at 1
 * (no hole: `q` fills it) and goes on from it; then `r` lands, `q` is late by the rule above,
 * and replay delivers `r` first. Holding every recorded result while a step of its scope runs
 * unrecorded would close it, but holds ordinary resumes back (a sibling's retry not due yet
 * stops the other branch); limited to an invocation that took over an expired lease it would
 * cost nothing, but the grant does not say that today.
 */
import { systemTimers, type Timers } from "../ports.ts";

/** A recorded delivery: the record's `seq`, the invocation that wrote it, its write time and its step id. */
export interface RecordedDelivery {
  seq: number;
  /** The writing invocation's number (`inv`); 0 for records that carry none. */
  inv: number;
  at: number;
  stepId: string;
}

/** A journaled place of a late record: its delivery position, and the invocation that decided it. */
export interface Placement {
  seq: number;
  inv: number;
}

/**
 * The scope a step id belongs to: everything up to its last `]/` — `notify[3]/send` is in
 * `notify[3]/` — or the workflow's own scope (`""`). Step names cannot hold `[` or `]`, so a
 * scope is never mistaken for a name. Each scope numbers its delivery positions apart.
 */
export function scopeOf(stepId: string): string {
  const at = stepId.lastIndexOf("]/");
  return at < 0 ? "" : stepId.slice(0, at + 2);
}

/** The order in which recorded results are released, from the records alone. */
export function deliveryOrder(recorded: readonly RecordedDelivery[]): RecordedDelivery[] {
  return [...recorded].sort((a, b) => a.seq - b.seq || b.inv - a.inv || a.at - b.at || (a.stepId < b.stepId ? -1 : a.stepId > b.stepId ? 1 : 0));
}

/**
 * False when no invocation wrote a position at or before one of an earlier invocation's, in any
 * scope (every replay but a zombie's aftermath): positions compared across scopes too, so a
 * true only sends the journal to the exact check.
 */
function mayBeLate(recorded: readonly RecordedDelivery[]): boolean {
  const lowest = new Map<number, number>();
  const highest = new Map<number, number>();
  // Records mostly come in runs of one invocation's (write order): the maps are touched per run.
  let inv = NaN;
  let lo = Infinity;
  let hi = -Infinity;
  const flush = () => {
    if (Number.isNaN(inv)) return;
    lowest.set(inv, Math.min(lo, lowest.get(inv) ?? Infinity));
    highest.set(inv, Math.max(hi, highest.get(inv) ?? -Infinity));
  };
  for (const d of recorded) {
    if (d.inv !== inv) {
      flush();
      inv = d.inv;
      lo = Infinity;
      hi = -Infinity;
    }
    if (d.seq < lo) lo = d.seq;
    if (d.seq > hi) hi = d.seq;
  }
  flush();
  if (lowest.size < 2) return false;
  let below = -Infinity;
  for (const inv of [...lowest.keys()].sort((a, b) => a - b)) {
    if ((lowest.get(inv) ?? Infinity) <= below) return true;
    below = Math.max(below, highest.get(inv) ?? -Infinity);
  }
  return false;
}

/**
 * The deliveries as replay releases them: a late record at its journaled place, or (`unplaced`)
 * at a new position past every recorded one, in its scope — the places an invocation must
 * journal before its code runs.
 */
export function lateDeliveries(
  recorded: readonly RecordedDelivery[],
  placements: ReadonlyMap<string, Placement>,
): { deliveries: RecordedDelivery[]; unplaced: Array<{ stepId: string; seq: number }> } {
  if (placements.size === 0 && !mayBeLate(recorded)) return { deliveries: [...recorded], unplaced: [] };
  const byScope = new Map<string, RecordedDelivery[]>();
  for (const d of recorded) {
    const scope = scopeOf(d.stepId);
    const list = byScope.get(scope);
    if (list) list.push(d);
    else byScope.set(scope, [d]);
  }
  const deliveries: RecordedDelivery[] = [];
  const unplaced: Array<{ stepId: string; seq: number }> = [];
  for (const list of byScope.values()) {
    // Each invocation's first position in this scope, over records and journaled places.
    const first = new Map<number, number>();
    const placed: RecordedDelivery[] = [];
    for (const d of list) {
      const place = placements.get(d.stepId);
      const at = place ? { seq: place.seq, inv: place.inv } : d;
      if (place) placed.push({ ...d, seq: place.seq });
      const seen = first.get(at.inv);
      if (seen === undefined || at.seq < seen) first.set(at.inv, at.seq);
    }
    // For each invocation, the first position any later invocation wrote in this scope.
    const invs = [...first.keys()].sort((a, b) => b - a);
    const laterFirst = new Map<number, number>();
    let min = Infinity;
    for (const inv of invs) {
      laterFirst.set(inv, min);
      min = Math.min(min, first.get(inv) ?? Infinity);
    }
    const late: RecordedDelivery[] = [];
    let last = 0;
    for (const d of list) {
      last = Math.max(last, d.seq);
      if (placements.has(d.stepId)) continue;
      if ((laterFirst.get(d.inv) ?? Infinity) <= d.seq) late.push(d);
      else deliveries.push(d);
    }
    for (const p of placed) last = Math.max(last, p.seq);
    deliveries.push(...placed);
    for (const d of deliveryOrder(late)) {
      last++;
      deliveries.push({ ...d, seq: last });
      unplaced.push({ stepId: d.stepId, seq: last });
    }
  }
  return { deliveries, unplaced };
}

export class DeliveryOrder {
  /** Step ids in delivery order: the recorded ones, then those delivered by this execution. */
  private readonly order: string[];
  private cursor = 0;
  private nextSeq: number;
  private readonly waiting = new Map<string, () => void>();
  private releasing = false;
  /** How many results were recorded; `order` holds this execution's own past them. */
  private readonly recorded: number;
  /** The first recorded result above a missing position (a hole); `Infinity`: no hole. */
  private readonly holdFrom: number;
  /** This scope's steps running here that may yet record a result (they have none recorded). */
  private live = 0;

  /** `onChange` runs when a result starts waiting and after one is released (the execution re-checks quiescence). */
  constructor(
    recorded: readonly RecordedDelivery[],
    private readonly onChange: () => void = () => {},
    private readonly timers: Pick<Timers, "defer"> = systemTimers,
  ) {
    const sorted = deliveryOrder(recorded);
    this.order = sorted.map((d) => d.stepId);
    this.recorded = sorted.length;
    // Positions are numbered from 1 with none skipped (a journaled place included), unless a
    // write is in flight, or was lost, below a recorded one.
    let next = 1;
    let holdFrom = Infinity;
    for (let i = 0; i < sorted.length; i++) {
      const seq = (sorted[i] as RecordedDelivery).seq;
      if (seq > next) {
        holdFrom = i;
        break;
      }
      if (seq === next) next++;
    }
    this.holdFrom = holdFrom;
    this.nextSeq = (sorted.at(-1)?.seq ?? 0) + 1;
  }

  /** The seq of a result this execution is about to record for `stepId`, which then takes the next position. */
  take(stepId: string): number {
    this.order.push(stepId);
    return this.nextSeq++;
  }

  /**
   * A step of this scope with no recorded result starts here (its body, its cancellation): the
   * answer is called once its record is written. Until every such step has its record, a
   * recorded result above a hole is not delivered (see the header: a straddle). Undefined when
   * no recorded result is above a hole: nothing to count.
   */
  running(): (() => void) | undefined {
    if (this.holdFrom === Infinity) return undefined;
    this.live++;
    let settled = false;
    return () => {
      if (settled) return;
      settled = true;
      this.live--;
      if (this.live === 0) this.releaseHead();
    };
  }

  /** Results waiting for an earlier one. */
  get pending(): number {
    return this.waiting.size;
  }

  /** True while the next recorded result lies above a hole and a step of this scope may still record below it. */
  get held(): boolean {
    return this.live > 0 && this.cursor >= this.holdFrom && this.cursor < this.recorded;
  }

  /**
   * True when results wait for one that nobody has asked for (and nothing is being released),
   * or for a position past the end: the code took another path than the journal.
   */
  get stalled(): boolean {
    if (this.waiting.size === 0 || this.releasing) return false;
    const head = this.order[this.cursor];
    return head === undefined || !this.waiting.has(head);
  }

  /** The step every waiting result waits for. */
  get head(): string | undefined {
    return this.order[this.cursor];
  }

  /** Resolves when `stepId`'s result may be delivered; at once (no promise) when it is next, or unordered (undefined). */
  turn(stepId: string | undefined): Promise<void> | undefined {
    if (stepId === undefined) return undefined;
    if (this.order[this.cursor] === stepId && !this.held) {
      this.advance();
      return undefined;
    }
    const turn = new Promise<void>((resolve) => this.waiting.set(stepId, resolve));
    this.onChange();
    return turn;
  }

  private advance(): void {
    this.cursor++;
    this.releaseHead();
  }

  /** Releases the head if its result waits (after the continuation of the one just delivered). */
  private releaseHead(): void {
    const head = this.order[this.cursor];
    if (head === undefined || !this.waiting.has(head) || this.releasing || this.held) return;
    // Let the continuation of the result just delivered run (and call its next steps) first.
    this.releasing = true;
    this.timers.defer(() => {
      this.releasing = false;
      const next = this.order[this.cursor];
      const resolve = next === undefined ? undefined : this.waiting.get(next);
      if (next === undefined || !resolve) return;
      // A step of this scope started meanwhile: its record is awaited first.
      if (this.held) return this.onChange();
      this.waiting.delete(next);
      this.advance();
      resolve();
      this.onChange();
    });
  }
}
