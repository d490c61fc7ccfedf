/**
 * Delivers step results to the workflow in the order they were first delivered live.
 *
 * Step ids are allocated when a step is called (`save`, `save#2`, …). In concurrent branches a
 * call often follows an `await` of another step, so the order of those calls depends on which
 * step finished first. Live, that is real completion order; on replay, recorded results would
 * all be ready at once. So every `run` record carries `seq`, the position of its delivery, and
 * replay releases recorded results in that order, letting each continuation run (a macrotask)
 * before the next result is released. Sequential code never waits: the next result is always
 * the one it asks for.
 *
 * The order is derived from the records alone, whatever interleaving wrote them: two
 * invocations of one run (a process frozen past its lease, a zombie Lambda) can both write a
 * record with the same `seq` under different step ids, neither seeing the other's. The later
 * invocation's comes first (its `inv`): it holds the run's lease, and went on from its own
 * record — a compensation it began is in the journal, and replay must reach it the way it did.
 * The earlier one's only ends a body that was running when it lost the lease (it starts
 * nothing more), and is delivered next, as that invocation would have found it. Then by write
 * time and by step id, so every replay decides the same way and no result waits for a position
 * that was already taken (simulator seed 177154612: a zombie's step and the holder's cancelled
 * sibling at one position, the holder's compensation after it).
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

/** The order in which recorded results are released, from the records alone. */
export function deliveryOrder(recorded: readonly RecordedDelivery[]): RecordedDelivery[] {
  return [...recorded].sort((a, b) => a.seq - b.seq || b.inv - a.inv || a.at - b.at || (a.stepId < b.stepId ? -1 : a.stepId > b.stepId ? 1 : 0));
}

export class DeliveryOrder {
  /** Step ids in delivery order: the recorded ones, then those delivered by this execution. */
  private readonly order: string[];
  private cursor = 0;
  private nextSeq: number;
  private readonly waiting = new Map<string, () => void>();
  private releasing = false;

  /** `onChange` runs when a result starts waiting and after one is released (the execution re-checks quiescence). */
  constructor(
    recorded: readonly RecordedDelivery[],
    private readonly onChange: () => void = () => {},
    private readonly timers: Pick<Timers, "defer"> = systemTimers,
  ) {
    const sorted = deliveryOrder(recorded);
    this.order = sorted.map((d) => d.stepId);
    this.nextSeq = sorted.reduce((max, d) => Math.max(max, d.seq), 0) + 1;
  }

  /** The seq of a result this execution is about to record for `stepId`, which then takes the next position. */
  take(stepId: string): number {
    this.order.push(stepId);
    return this.nextSeq++;
  }

  /** Results waiting for an earlier one. */
  get pending(): number {
    return this.waiting.size;
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
    if (this.order[this.cursor] === stepId) {
      this.advance();
      return undefined;
    }
    const turn = new Promise<void>((resolve) => this.waiting.set(stepId, resolve));
    this.onChange();
    return turn;
  }

  private advance(): void {
    this.cursor++;
    const head = this.order[this.cursor];
    if (head === undefined || !this.waiting.has(head) || this.releasing) return;
    // Let the continuation of the result just delivered run (and call its next steps) first.
    this.releasing = true;
    this.timers.defer(() => {
      this.releasing = false;
      const next = this.order[this.cursor];
      const resolve = next === undefined ? undefined : this.waiting.get(next);
      if (next === undefined || !resolve) return;
      this.waiting.delete(next);
      this.advance();
      resolve();
      this.onChange();
    });
  }
}
