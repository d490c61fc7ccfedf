/**
 * Delivers step results to the workflow in the order they were first delivered live.
 *
 * Step ids are allocated when a step is called (`save`, `save#2`, …). In concurrent branches a
 * call often follows an `await` of another step, so the order of those calls depends on which
 * step finished first. Live, that is real completion order; on replay, recorded results would
 * all be ready at once. So every `run` record carries `seq`, the position of its delivery, and
 * replay releases recorded results in `seq` order, letting each continuation run (a macrotask)
 * before the next result is released. Sequential code never waits: the next result is always
 * the one it asks for.
 */
export class DeliveryOrder {
  /** Recorded seqs, ascending, followed by the seqs this execution hands out. */
  private readonly order: number[];
  private cursor = 0;
  private nextSeq: number;
  private readonly waiting = new Map<number, () => void>();
  private releasing = false;

  /** `onChange` runs when a result starts waiting and after one is released (the execution re-checks quiescence). */
  constructor(
    recorded: readonly number[],
    private readonly onChange: () => void = () => {},
  ) {
    this.order = [...recorded].sort((a, b) => a - b);
    this.nextSeq = (this.order.at(-1) ?? 0) + 1;
  }

  /** A seq for a record this execution is about to write. */
  take(): number {
    const seq = this.nextSeq++;
    this.order.push(seq);
    return seq;
  }

  /** Results waiting for an earlier one. */
  get pending(): number {
    return this.waiting.size;
  }

  /** True when results wait for one that nobody has asked for (and nothing is being released). */
  get stalled(): boolean {
    const head = this.order[this.cursor];
    return this.waiting.size > 0 && !this.releasing && head !== undefined && !this.waiting.has(head);
  }

  /** The seq every waiting result waits for. */
  get head(): number | undefined {
    return this.order[this.cursor];
  }

  /** Resolves when `seq` may be delivered; at once (no promise) when it is next. */
  turn(seq: number | undefined): Promise<void> | undefined {
    if (seq === undefined || this.order[this.cursor] === seq) {
      if (seq !== undefined) this.advance();
      return undefined;
    }
    const turn = new Promise<void>((resolve) => this.waiting.set(seq, resolve));
    this.onChange();
    return turn;
  }

  private advance(): void {
    this.cursor++;
    const head = this.order[this.cursor];
    if (head === undefined || !this.waiting.has(head) || this.releasing) return;
    // Let the continuation of the result just delivered run (and call its next steps) first.
    this.releasing = true;
    setImmediate(() => {
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
