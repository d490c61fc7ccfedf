/**
 * `step.now()`, `step.random()` and `step.uuid()`: the same values on every replay, with no
 * writes of their own. Randomness comes from a PRNG seeded by the run id. Times are taken live
 * and ride along on the next record written (`marks`, keyed by the call's ordinal); replay reads
 * them back. A time taken after the last write of a crashed invocation was never made durable,
 * and nothing durable depended on it.
 */
import type { JournalView } from "./journal-view.ts";
import { hash32, mulberry32, uuidFrom } from "./random.ts";

export class ReplayValues {
  private readonly rng: () => number;
  private nowOrdinal = 0;
  private pending: Record<string, number> = {};

  constructor(
    runId: string,
    private readonly journal: JournalView,
    private readonly clock: () => number,
  ) {
    this.rng = mulberry32(hash32(`random:${runId}`));
  }

  now(): number {
    const ordinal = String(this.nowOrdinal++);
    const recorded = this.journal.mark(ordinal);
    if (recorded !== undefined) return recorded;
    const value = this.clock();
    this.pending[ordinal] = value;
    return value;
  }

  random(): number {
    return this.rng();
  }

  uuid(): string {
    return uuidFrom(this.rng);
  }

  /** The times taken since the last write, for the record about to be written (then forgotten). */
  takeMarks(): Record<string, number> | undefined {
    if (Object.keys(this.pending).length === 0) return undefined;
    const marks = this.pending;
    this.pending = {};
    return marks;
  }
}
