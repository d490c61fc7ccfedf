/**
 * The waterfall's geometry: where each step of a run goes on the run page's SVG timeline
 * (dashboard-svg.ts draws it). Pure: the run, its history, the time and the requested view in;
 * lanes, bars and links out.
 *
 * Lanes. The run's own steps share a lane while they run one after another; a step that
 * overlaps the lane's last one (a `Promise.all` branch) takes the next free lane. Each
 * sub-context (`<mapId>/<index>`, and the steps under it, `<mapId>/<index>/<step>`) gets lanes of
 * its own the same way, after the run's, one fan-out after another. A fan-out of more than
 * `PACK_ABOVE` (dashboard-lanes.ts) items shares lanes instead: an item takes the first lane free when it
 * starts, so a map at concurrency 5 draws as 5 lanes however many items it has.
 *
 * A 1,000-step run stays readable three ways, all by links (no script): **collapse** — steps
 * narrower than {@link GEOMETRY.minPx} next to each other on a lane draw as one hatched bar (at
 * most a twentieth of the plot wide) that says how many steps it holds and links to a zoom on them; **zoom** — `from`/`to` (epoch ms) in
 * the query show that window only (the axis is cut into ten links that zoom to each tenth, with
 * earlier / later / zoom out / whole run beside it), and lanes with nothing in the window are
 * left out; **paging** — at most {@link GEOMETRY.lanesPerPage} lanes a page (`lanes=<n>`).
 */
import type { HistoryEntry } from "../client.ts";
import { durationText, instantText, isInstant } from "../http/display.ts";
import { type RunStatus, TERMINAL_STATUSES } from "../ports.ts";
import { lanesOf } from "./dashboard-lanes.ts";
import { type Marker, type Segment, type TimelineItem, timelineOf } from "./dashboard-steps.ts";

export { PACK_ABOVE } from "./dashboard-lanes.ts";

export const GEOMETRY = {
  width: 1000,
  /** Left of the plot: lane labels. */
  gutter: 170,
  right: 14,
  /** Above the first lane: the axis. */
  top: 30,
  laneHeight: 22,
  barHeight: 14,
  /** Narrower than this (viewBox units), neighbouring steps collapse into one bar. */
  minPx: 3,
  /** The widest a collapsed bar grows (a twentieth of the plot), so that its zoom link gets somewhere. */
  maxClusterPx: 40,
  lanesPerPage: 40,
  zoomSlices: 10,
} as const;

export interface WaterfallRun {
  runId: string;
  status: RunStatus;
  updatedAt: number;
  incarnation?: number | undefined;
}

/** What the query asks to see. */
export interface WaterfallView {
  from?: number;
  to?: number;
  /** 1-based. */
  lanes?: number;
}

export interface PlacedSegment {
  kind: Segment["kind"];
  x0: number;
  x1: number;
  /** It goes on past the window's right edge (or has no end yet and is cut at now). */
  cutRight: boolean;
  cutLeft: boolean;
  text: string;
}

export interface PlacedItem {
  item: TimelineItem;
  segments: PlacedSegment[];
  x0: number;
  x1: number;
  /** Free space after the bar on its lane, up to the next bar or the edge (for a label that does not fit inside). */
  room: number;
}

export interface PlacedCluster {
  items: TimelineItem[];
  x0: number;
  x1: number;
  from: number;
  to: number;
}

export interface PlacedLane {
  /** Index among all lanes (stable across zoom and pages). */
  index: number;
  label: string;
  /** Says what the lane holds, for its title. */
  about: string;
  y: number;
  bars: Array<PlacedItem | PlacedCluster>;
}

export interface WaterfallLayout {
  width: number;
  height: number;
  /** The window shown, and the whole run. */
  from: number;
  to: number;
  whole: { from: number; to: number };
  zoomed: boolean;
  lanes: PlacedLane[];
  /** Lanes with something in the window, over all pages. */
  laneCount: number;
  page: number;
  pages: number;
  ticks: Array<{ x: number; label: string }>;
  slices: Array<{ x0: number; x1: number; view: WaterfallView; text: string }>;
  markers: Array<Marker & { x: number }>;
  /** Where now is, when the run has not ended and now is in the window. */
  nowX: number | undefined;
  itemCount: number;
  undrawn: string[];
}

/**
 * Lays out a run's waterfall.
 *
 * @example
 * ```ts
 * const { run, entries } = await client.history("order-8472");
 * const layout = layoutWaterfall(run, entries, Date.now(), { from: run.createdAt, to: run.updatedAt });
 * ```
 */
export function layoutWaterfall(run: WaterfallRun, entries: readonly HistoryEntry[], now: number, view: WaterfallView = {}): WaterfallLayout {
  const timeline = timelineOf(entries, run);
  const items = timeline.items;
  const terminal = TERMINAL_STATUSES.has(run.status);
  const whole = domain(items, terminal, run.updatedAt, now);
  const cap = terminal ? whole.to : Math.max(now, whole.from);
  const win = windowOf(view, whole);
  const zoomed = win.from > whole.from || win.to < whole.to;
  const span = win.to - win.from;
  const plot = GEOMETRY.width - GEOMETRY.gutter - GEOMETRY.right;
  const x = (t: number) => GEOMETRY.gutter + ((Math.min(Math.max(t, win.from), win.to) - win.from) / span) * plot;
  const endOf = (end: number | undefined) => (end === undefined || !isInstant(end) ? cap : end);
  const visible = (i: TimelineItem) => i.start <= win.to && endOf(i.end) >= win.from;

  const all = lanesOf(items, endOf);
  const shown = zoomed ? all.filter((l) => l.items.some(visible)) : all;
  const pages = Math.max(1, Math.ceil(shown.length / GEOMETRY.lanesPerPage));
  const page = Math.min(Math.max(1, Math.floor(view.lanes ?? 1)), pages);
  const onPage = shown.slice((page - 1) * GEOMETRY.lanesPerPage, page * GEOMETRY.lanesPerPage);

  const place = (i: TimelineItem): PlacedItem => {
    const segments: PlacedSegment[] = [];
    for (const s of i.segments) {
      if (!isInstant(s.start)) continue;
      const end = endOf(s.end);
      if (end < win.from || s.start > win.to || end < s.start) continue;
      segments.push({ kind: s.kind, x0: x(s.start), x1: x(end), cutLeft: s.start < win.from, cutRight: end > win.to || s.end === undefined || !isInstant(s.end), text: s.text });
    }
    return { item: i, segments, x0: x(i.start), x1: x(endOf(i.end)), room: 0 };
  };
  const lanes: PlacedLane[] = onPage.map((lane, n) => ({
    index: all.indexOf(lane),
    label: lane.label,
    about: lane.about,
    y: GEOMETRY.top + n * GEOMETRY.laneHeight,
    bars: withRoom(collapse(lane.items.filter(visible).map(place), endOf), GEOMETRY.width - GEOMETRY.right),
  }));

  return {
    width: GEOMETRY.width,
    height: GEOMETRY.top + Math.max(1, lanes.length) * GEOMETRY.laneHeight + 8,
    from: win.from,
    to: win.to,
    whole,
    zoomed,
    lanes,
    laneCount: shown.length,
    page,
    pages,
    ticks: ticksOf(win, whole.from, x),
    slices: slicesOf(win, x),
    markers: timeline.markers.filter((m) => m.at >= win.from && m.at <= win.to).map((m) => ({ ...m, x: x(m.at) })),
    nowX: !terminal && now >= win.from && now <= win.to ? x(now) : undefined,
    itemCount: items.length,
    undrawn: timeline.undrawn,
  };
}

/**
 * The whole run on the axis: from its first step to its end (or now, while it runs). A planned
 * end (a wake time, a retry time) is in view when it at most doubles the chart; beyond, its bar
 * runs to the edge and its title says when.
 */
function domain(items: readonly TimelineItem[], terminal: boolean, updatedAt: number, now: number): { from: number; to: number } {
  let from = items.length ? Number.POSITIVE_INFINITY : isInstant(updatedAt) ? updatedAt : now;
  for (const i of items) from = Math.min(from, i.start);
  let actual = terminal ? (isInstant(updatedAt) ? updatedAt : from) : now;
  const ends = items.flatMap((i) => i.segments.flatMap((s) => (s.end !== undefined && isInstant(s.end) ? [s.end] : [])));
  const planned: number[] = [];
  for (const e of ends) {
    if (terminal || e <= now) actual = Math.max(actual, e);
    else planned.push(e);
  }
  let to = Math.max(actual, from);
  for (const e of planned) if (e - from <= 2 * Math.max(1, actual - from)) to = Math.max(to, e);
  return { from, to: Math.max(to, from + 1) };
}

function windowOf(view: WaterfallView, whole: { from: number; to: number }): { from: number; to: number } {
  if (!isInstant(view.from) || !isInstant(view.to) || view.from >= view.to) return whole;
  const from = Math.max(whole.from, view.from);
  const to = Math.min(whole.to, view.to);
  return to - from >= 1 ? { from, to } : whole;
}

/** Neighbouring bars too narrow to see become one cluster bar; a lone narrow bar stays itself. */
function collapse(placed: readonly PlacedItem[], endOf: (end: number | undefined) => number): Array<PlacedItem | PlacedCluster> {
  const out: Array<PlacedItem | PlacedCluster> = [];
  let group: PlacedItem[] = [];
  let reach = Number.NEGATIVE_INFINITY;
  const flush = () => {
    const [first] = group;
    if (group.length === 1 && first) out.push(first);
    else if (first) {
      const items = group.map((p) => p.item);
      out.push({ items, x0: first.x0, x1: reach, from: Math.min(...items.map((i) => i.start)), to: Math.max(...items.map((i) => endOf(i.end))) });
    }
    group = [];
    reach = Number.NEGATIVE_INFINITY;
  };
  for (const p of placed) {
    const narrow = p.x1 - p.x0 < GEOMETRY.minPx;
    const [first] = group;
    if (!narrow || p.x0 > reach + GEOMETRY.minPx || (first && p.x1 - first.x0 > GEOMETRY.maxClusterPx)) flush();
    if (narrow) {
      group.push(p);
      reach = Math.max(reach, p.x1);
    } else out.push(p);
  }
  flush();
  return out;
}

function withRoom(bars: Array<PlacedItem | PlacedCluster>, edge: number): Array<PlacedItem | PlacedCluster> {
  bars.forEach((b, k) => {
    if ("item" in b) b.room = Math.max(0, (bars[k + 1]?.x0 ?? edge) - b.x1);
  });
  return bars;
}

const STEPS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 15e3, 3e4, 6e4, 12e4, 3e5, 6e5, 9e5, 18e5, 36e5, 72e5, 108e5, 216e5, 432e5, 864e5, 1728e5, 6048e5, 2592e6, 31536e6];

/** Axis ticks at round offsets from the run's start (labelled `+1.0 s`), about eight of them. */
function ticksOf(win: { from: number; to: number }, origin: number, x: (t: number) => number): Array<{ x: number; label: string }> {
  const span = win.to - win.from;
  let step = STEPS.find((s) => span / s <= 8) ?? STEPS[STEPS.length - 1] ?? 1;
  while (span / step > 8) step *= 10;
  const ticks: Array<{ x: number; label: string }> = [];
  for (let k = Math.ceil((win.from - origin) / step); origin + k * step <= win.to && ticks.length < 20; k++) {
    const offset = k * step;
    ticks.push({ x: x(origin + offset), label: offset === 0 ? "0" : `+${durationText(offset)}` });
  }
  return ticks;
}

function slicesOf(win: { from: number; to: number }, x: (t: number) => number): WaterfallLayout["slices"] {
  const width = (win.to - win.from) / GEOMETRY.zoomSlices;
  if (width < 1) return [];
  return Array.from({ length: GEOMETRY.zoomSlices }, (_, k) => {
    const from = Math.floor(win.from + k * width);
    const to = Math.ceil(win.from + (k + 1) * width);
    return { x0: x(from), x1: x(to), view: { from, to }, text: `zoom to ${instantText(from)} – ${instantText(to)} (${durationText(to - from)})` };
  });
}

/** A link beside the chart: another window or another page of lanes. */
export interface WaterfallNavLink {
  label: string;
  view: WaterfallView;
  rel?: "prev" | "next";
}

/**
 * The links beside a waterfall: earlier / later / zoom out / whole run while zoomed, and the
 * pages of lanes when there are more than one.
 *
 * @example
 * ```ts
 * for (const l of waterfallNav(layout)) console.log(l.label, l.view);
 * ```
 */
export function waterfallNav(layout: WaterfallLayout): WaterfallNavLink[] {
  const { from, to, whole } = layout;
  const width = to - from;
  const keep = (v: WaterfallView): WaterfallView => ({ ...v, ...(layout.page > 1 ? { lanes: layout.page } : {}) });
  const links: WaterfallNavLink[] = [];
  if (layout.zoomed) {
    if (from > whole.from) links.push({ label: "← Earlier", view: keep({ from: Math.max(whole.from, from - width), to: Math.max(whole.from, from - width) + width }) });
    if (to < whole.to) links.push({ label: "Later →", view: keep({ from: Math.min(whole.to, to + width) - width, to: Math.min(whole.to, to + width) }) });
    const center = from + width / 2;
    links.push({ label: "Zoom out", view: { from: Math.max(whole.from, Math.floor(center - 2 * width)), to: Math.min(whole.to, Math.ceil(center + 2 * width)) } });
    links.push({ label: "Whole run", view: {} });
  }
  const window = layout.zoomed ? { from, to } : {};
  if (layout.page > 1) links.push({ label: `← Lanes ${(layout.page - 2) * GEOMETRY.lanesPerPage + 1}–${(layout.page - 1) * GEOMETRY.lanesPerPage}`, view: { ...window, lanes: layout.page - 1 }, rel: "prev" });
  if (layout.page < layout.pages) links.push({ label: `Lanes ${layout.page * GEOMETRY.lanesPerPage + 1}–${Math.min(layout.laneCount, (layout.page + 1) * GEOMETRY.lanesPerPage)} →`, view: { ...window, lanes: layout.page + 1 }, rel: "next" });
  return links;
}

/**
 * The view a page's query asks for (`from`, `to`: epoch ms; `lanes`: a page); anything else is ignored.
 *
 * @example
 * ```ts
 * viewOf({ from: "1767268800000", to: "1767268801000" }); // { from: 1767268800000, to: 1767268801000 }
 * viewOf({ from: "soon" }); // {}
 * ```
 */
export function viewOf(query: Readonly<Record<string, string | undefined>>): WaterfallView {
  const int = (v: string | undefined) => (v !== undefined && /^-?\d{1,17}$/.test(v) ? Number(v) : undefined);
  const from = int(query.from);
  const to = int(query.to);
  const lanes = int(query.lanes);
  return { ...(from !== undefined && to !== undefined && isInstant(from) && isInstant(to) && from < to ? { from, to } : {}), ...(lanes !== undefined && lanes >= 1 ? { lanes } : {}) };
}
