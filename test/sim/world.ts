/**
 * The simulated world: one virtual clock, and every piece of pending work of every actor (a
 * store operation to apply, its answer to deliver, a deferred callback, a due timer, a step body
 * to finish) as an item the tape picks from. Only one item runs at a time, and the promise
 * callbacks it sets off all run before the next pick (one real macrotask between picks drains
 * them), so the tape alone decides the interleaving: a seed replays exactly.
 *
 * Actors are workers (an engine each), the client, the watchdog. A frozen actor's items and
 * timers wait (SIGSTOP); a dead actor's are dropped (SIGKILL).
 */
import type { Clock, Timers } from "../../lib/ports.ts";
import type { Tape } from "./tape.ts";

interface Item {
  seq: number;
  actor: string;
  label: string;
  run: () => void;
}

interface Timer {
  seq: number;
  at: number;
  actor: string;
  label: string;
  fn: () => void;
  cancelled: boolean;
}

/** The world's trace keeps this many lines (the end of a long run is what explains it). */
const TRACE_LINES = Number(process.env.SIM_TRACE_LINES ?? 4_000);

export class World {
  now: number;
  steps = 0;
  readonly frozen = new Set<string>();
  readonly dead = new Set<string>();
  private seq = 0;
  private items: Item[] = [];
  private timers: Timer[] = [];
  private readonly lines: string[] = [];
  readonly clock: Clock;

  constructor(
    readonly tape: Tape,
    private readonly start: number,
  ) {
    this.now = start;
    this.clock = { now: () => this.now };
  }

  /** Adds a runnable item for `actor` (dropped if the actor is dead). */
  add(actor: string, label: string, run: () => void): void {
    if (this.dead.has(actor)) return;
    this.items.push({ seq: ++this.seq, actor, label, run });
  }

  /** Calls `fn` as an item of `actor` once the clock reaches `at`; returns how to cancel it. */
  timer(actor: string, at: number, label: string, fn: () => void): () => void {
    const t: Timer = { seq: ++this.seq, at, actor, label, fn, cancelled: false };
    if (!this.dead.has(actor)) this.timers.push(t);
    return () => {
      t.cancelled = true;
    };
  }

  /**
   * The actor's timers port: `after` on the virtual clock; `defer` as an item, each actor's in
   * the order they were deferred (as Node runs `setImmediate` callbacks), interleaved with
   * everything else in any order the tape picks.
   */
  timersFor(actor: string): Timers {
    const queue: Array<() => void> = [];
    const next = () => {
      const fn = queue[0];
      if (fn) this.add(actor, "defer", () => {
        queue.shift();
        fn();
        next();
      });
    };
    return {
      after: (ms, fn) => this.timer(actor, this.now + Math.max(0, ms), `timer+${ms}`, fn),
      defer: (fn) => {
        queue.push(fn);
        if (queue.length === 1) next();
      },
    };
  }

  /** SIGKILL: the actor's pending work is gone, and it never runs again. */
  kill(actor: string): void {
    this.dead.add(actor);
    this.frozen.delete(actor);
    this.items = this.items.filter((i) => i.actor !== actor);
    this.timers = this.timers.filter((t) => t.actor !== actor);
  }

  log(line: string): void {
    this.lines.push(`${String(this.steps).padStart(6)} t+${((this.now - this.start) / 1000).toFixed(3)}s ${line}`);
    if (this.lines.length > TRACE_LINES) this.lines.splice(0, this.lines.length - TRACE_LINES);
  }

  trace(): string[] {
    return [...this.lines];
  }

  /** Lets every promise callback queued so far run (one real macrotask). */
  drain(): Promise<void> {
    return new Promise((resolve) => setImmediate(resolve));
  }

  /** Runs one item the tape picks among the runnable ones (due timers included); false if none. */
  async step(): Promise<boolean> {
    this.promoteDueTimers();
    const ready = this.items.filter((i) => !this.frozen.has(i.actor));
    if (ready.length === 0) return false;
    const item = ready[this.tape.next(ready.length)] as Item;
    this.items.splice(this.items.indexOf(item), 1);
    this.steps++;
    this.log(`${item.actor} ${item.label}`);
    item.run();
    // Everything the item set off runs before anything else happens (a kill, a freeze, a jump).
    await this.drain();
    return true;
  }

  /** Moves the clock to the next timer of an actor that is not frozen (or to `at`, if sooner); false if there is none. */
  advance(at?: number): boolean {
    const live = this.timers.filter((t) => !t.cancelled && !this.frozen.has(t.actor));
    const next = live.reduce<number | undefined>((min, t) => (min === undefined || t.at < min ? t.at : min), undefined);
    const target = next === undefined ? at : at === undefined ? next : Math.min(next, at);
    if (target === undefined) return false;
    if (target > this.now) this.now = target;
    this.promoteDueTimers();
    return true;
  }

  /** Jumps the clock forward (a pause of the whole machine, or a clock that leaps). */
  jump(ms: number): void {
    this.now += ms;
  }

  /** Whether anything of a live actor is pending (items or timers). */
  get idle(): boolean {
    return this.items.every((i) => this.frozen.has(i.actor)) && this.timers.every((t) => t.cancelled || this.frozen.has(t.actor));
  }

  private promoteDueTimers(): void {
    const due = this.timers.filter((t) => !t.cancelled && t.at <= this.now && !this.frozen.has(t.actor));
    if (due.length === 0) return;
    due.sort((a, b) => a.at - b.at || a.seq - b.seq);
    const fired = new Set(due);
    this.timers = this.timers.filter((t) => !fired.has(t) && !t.cancelled);
    for (const t of due) this.items.push({ seq: t.seq, actor: t.actor, label: t.label, run: t.fn });
  }
}
