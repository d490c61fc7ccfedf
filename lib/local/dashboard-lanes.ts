/**
 * The waterfall's lanes (see dashboard-waterfall.ts): the run's own steps share a lane while they
 * run one after another, an overlapping step takes the next free lane; each sub-context gets
 * lanes of its own the same way, one fan-out after another; a fan-out of more than
 * {@link PACK_ABOVE} items shares lanes, each item taking the first one free when it starts.
 * Pure.
 */
import type { TimelineItem } from "./dashboard-steps.ts";

/** Fan-outs of more items than this share lanes (see the module comment). */
export const PACK_ABOVE = 24;

export interface Lane {
  label: string;
  about: string;
  items: TimelineItem[];
  lastEnd: number;
}

/** Packs items into lanes: the run's own, then each sub-context's (or each big fan-out's, shared). */
export function lanesOf(items: readonly TimelineItem[], endOf: (end: number | undefined) => number): Lane[] {
  const main = items.filter((i) => i.context === "");
  const families = new Map<string, Map<string, TimelineItem[]>>();
  for (const i of items) {
    if (i.context === "") continue;
    const contexts = families.get(i.family) ?? new Map<string, TimelineItem[]>();
    families.set(i.family, contexts);
    const list = contexts.get(i.context) ?? [];
    contexts.set(i.context, list);
    list.push(i);
  }
  const lanes = pack(main, endOf, (n) => (n === 1 ? "run" : `run ∥ ${n}`), (n) => (n === 1 ? "the run's own steps" : `the run's own steps that overlapped those on the lanes above (parallel branches, lane ${n})`));
  for (const [family, contexts] of families) {
    if (contexts.size > PACK_ABOVE) {
      const units = [...contexts.values()];
      lanes.push(...packUnits(units, endOf, family, contexts.size));
      continue;
    }
    const ordered = [...contexts.entries()].sort(([a], [b]) => indexOf(a) - indexOf(b));
    for (const [context, list] of ordered) {
      lanes.push(...pack(list, endOf, (n) => (n === 1 ? context : `${context} ∥ ${n}`), (n) => `the steps of item ${context}${n === 1 ? "" : ` that overlapped the lane above (lane ${n})`}`));
    }
  }
  return lanes;
}

function pack(items: readonly TimelineItem[], endOf: (end: number | undefined) => number, label: (n: number) => string, about: (n: number) => string): Lane[] {
  const lanes: Lane[] = [];
  for (const i of items) {
    let lane = lanes.find((l) => l.lastEnd <= i.start);
    if (!lane) {
      lane = { label: label(lanes.length + 1), about: about(lanes.length + 1), items: [], lastEnd: Number.NEGATIVE_INFINITY };
      lanes.push(lane);
    }
    lane.items.push(i);
    lane.lastEnd = Math.max(lane.lastEnd, endOf(i.end));
  }
  return lanes;
}

/** A big fan-out: each item (all its steps) takes the first shared lane free when it starts. */
function packUnits(units: TimelineItem[][], endOf: (end: number | undefined) => number, family: string, count: number): Lane[] {
  const spans = units.map((u) => ({ items: u, start: Math.min(...u.map((i) => i.start)), end: Math.max(...u.map((i) => endOf(i.end))) })).sort((a, b) => a.start - b.start);
  const lanes: Lane[] = [];
  for (const u of spans) {
    let lane = lanes.find((l) => l.lastEnd <= u.start);
    if (!lane) {
      const n = lanes.length + 1;
      lane = { label: `${family}/… ${n}`, about: `items of ${family} (${count} items share these lanes: each takes the first lane free when it starts), lane ${n}`, items: [], lastEnd: Number.NEGATIVE_INFINITY };
      lanes.push(lane);
    }
    lane.items.push(...u.items);
    lane.lastEnd = Math.max(lane.lastEnd, u.end);
  }
  for (const l of lanes) l.items.sort((a, b) => a.start - b.start);
  return lanes;
}

function indexOf(context: string): number {
  return Number(/(\d+)\]?$/.exec(context)?.[1] ?? 0);
}
