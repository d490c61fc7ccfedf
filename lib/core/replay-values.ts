/**
 * `step.now()`, `step.random()`, `step.uuid()` and `step.patched()`: the same values on every
 * replay, with no writes of their own. Randomness comes from a PRNG seeded by the run id. Times are taken live
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

  /** The journaled answer of `patched(id)`, or `ifNew` recorded as the answer from now on. */
  patched(id: string, ifNew: () => boolean): boolean {
    const key = `patch:${id}`;
    const recorded = this.pending[key] ?? this.journal.mark(key);
    if (recorded !== undefined) return recorded === 1;
    const value = ifNew();
    this.pending[key] = value ? 1 : 0;
    return value;
  }

  /** The journaled answer of `patched(id)`, if this run recorded one. */
  recordedPatch(id: string): boolean | undefined {
    const recorded = this.pending[`patch:${id}`] ?? this.journal.mark(`patch:${id}`);
    return recorded === undefined ? undefined : recorded === 1;
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
