/**
 * A scope of step ids: the workflow's own (no prefix), or a `step.map` item's or a
 * `step.parallel` branch's (`<id>[<index>]/` or `<id>[<branch>]/`), nested as deep as the code
 * nests them. A scope allocates its step ids (`name`, `name#2`, … under its prefix), keeps its
 * own deterministic values (`step.now()` ordinals, `step.random()`), and tells the scopes around
 * it when its code blocks — a map frees the slot of an item that sleeps or waits.
 */
import { assertName } from "../definition.ts";
import type { JournalView } from "../journal-view.ts";
import { hash32, mulberry32, uuidFrom } from "../random.ts";
import type { DeliveryOrder } from "../delivery-order.ts";
import type { ExecutionCore } from "./core.ts";

export class Scope {
  /** This scope's results are delivered in the order they were delivered live. */
  readonly order: DeliveryOrder;
  private readonly counters = new Map<string, number>();
  private readonly listeners: Array<() => void> = [];
  private readonly rng: () => number;
  private nowOrdinal = 0;
  private pending: Record<string, number> = {};

  constructor(
    readonly core: ExecutionCore,
    /** `""` for the workflow's own scope, else the prefix every id of this scope starts with. */
    readonly prefix: string,
    readonly parent?: Scope,
  ) {
    // The workflow's own scope keeps the seed and mark keys it always had.
    this.rng = mulberry32(hash32(prefix === "" ? `random:${core.journalId}` : `random:${core.journalId}:${prefix}`));
    this.order = core.orderFor(prefix);
    core.addMarkSource(() => this.takeMarks());
  }

  private get journal(): JournalView {
    return this.core.o.journal;
  }

  /** The next id of `name` in this scope; it counts as reached (for replay checks and `step.log`). */
  nextId(name: string): string {
    const count = this.counters.get(name);
    if (count === undefined) assertName("step", name); // a name seen before was checked then
    const n = (count ?? 0) + 1;
    this.counters.set(name, n);
    const id = `${this.prefix}${n === 1 ? name : `${name}#${n}`}`;
    this.core.visited.add(id);
    this.core.lastReached = id;
    return id;
  }

  /** True when the journal holds steps of this scope that this execution has not reached yet: it is replaying history. */
  replayingPastHere(): boolean {
    return this.journal.stepIds().some((id) => id.startsWith(this.prefix) && !this.core.visited.has(id));
  }

  /** Calls `listener` when code of this scope (or one inside it) blocks. */
  onBlocked(listener: () => void): void {
    this.listeners.push(listener);
  }

  blocked(): void {
    for (const listener of this.listeners) listener();
    this.parent?.blocked();
  }

  // ---- values the same on every replay (`step.now()`, `step.random()`, `step.patched()`) ----

  now(): number {
    const ordinal = `${this.prefix}${this.nowOrdinal++}`;
    const recorded = this.journal.mark(ordinal);
    if (recorded !== undefined) return recorded;
    const value = this.core.o.now();
    this.pending[ordinal] = value;
    return value;
  }

  random(): number {
    return this.rng();
  }

  uuid(): string {
    return uuidFrom(this.rng);
  }

  /** The journaled answer of `patched(id)`, or `ifNew` recorded as the answer from now on. */
  patched(id: string, ifNew: () => boolean): boolean {
    const key = `patch:${this.prefix}${id}`;
    const recorded = this.pending[key] ?? this.journal.mark(key);
    if (recorded !== undefined) return recorded === 1;
    const value = ifNew();
    this.pending[key] = value ? 1 : 0;
    return value;
  }

  /** The journaled answer of `patched(id)`, if this run recorded one. */
  recordedPatch(id: string): boolean | undefined {
    const key = `patch:${this.prefix}${id}`;
    const recorded = this.pending[key] ?? this.journal.mark(key);
    return recorded === undefined ? undefined : recorded === 1;
  }

  private takeMarks(): Record<string, number> | undefined {
    if (Object.keys(this.pending).length === 0) return undefined;
    const marks = this.pending;
    this.pending = {};
    return marks;
  }
}
