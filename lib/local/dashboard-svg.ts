/**
 * Draws a {@link WaterfallLayout} as an SVG string for the run page: no script, every bar a
 * group with a `<title>` (its tooltip and accessible name), children and collapsed clusters as
 * links, the axis cut into zoom links. Every piece of text — step ids, signal senders, error
 * messages, run ids — is escaped (user text all of it); numbers are rounded to 0.1.
 */
import { escapeHtml } from "../http/html.ts";
import { durationText, instantText } from "../http/display.ts";
import type { HistoryEntry } from "../client.ts";
import { GEOMETRY, type PlacedCluster, type PlacedItem, type PlacedLane, type WaterfallLayout, type WaterfallRun, type WaterfallView, layoutWaterfall } from "./dashboard-waterfall.ts";

export interface WaterfallLinks {
  /** The page of another run (a child). */
  run(runId: string): string;
  /** This run's page showing another window or lane page. */
  view(view: WaterfallView): string;
}

const e = escapeHtml;
const n = (v: number) => String(Math.round(v * 10) / 10);
/** Rough width of a character of the bars' 11-unit font, to decide whether a label fits. */
const CHAR = 6.4;

const STYLE = `.wf{font:11px system-ui,sans-serif;fill:var(--fg,#1b1f24)}.wf .wf-row{fill:var(--line,#d0d7de);opacity:.18}
.wf .wf-axis line{stroke:var(--line,#d0d7de)}.wf .wf-axis text,.wf .wf-label{fill:var(--muted,#57606a)}
.wf .wf-slice{fill:transparent}.wf a:hover .wf-slice,.wf a:focus .wf-slice{fill:var(--accent,#0b57d0);opacity:.12}
.wf .wf-ok{fill:var(--ok,#1a7f37)}.wf .wf-failed{fill:var(--bad,#b3261e)}.wf .wf-attempt{fill:var(--bad,#b3261e);opacity:.5}
.wf .wf-retry{stroke:var(--bad,#b3261e);stroke-dasharray:3 2;stroke-width:1.5}.wf .wf-running{fill:var(--warn,#9a6700)}
.wf .wf-sleep{fill:var(--muted,#57606a);opacity:.45}.wf .wf-wait{fill:var(--accent,#0b57d0);opacity:.4}
.wf .wf-child{fill:var(--accent,#0b57d0);opacity:.75}.wf .wf-s-timed-out .wf-wait,.wf .wf-s-cancelled .wf-wait{fill:var(--muted,#57606a)}
.wf .wf-comp .wf-seg{stroke:#8250df;stroke-width:1.5}.wf .wf-cluster{fill:url(#wf-hatch);stroke:var(--muted,#57606a);stroke-width:.5}.wf-hatch-bg{fill:var(--line,#d0d7de)}.wf-hatch-line{stroke:var(--muted,#57606a);stroke-width:1.5}
.wf .wf-text{fill:#fff;font-size:10px;pointer-events:none}.wf .wf-text.out{fill:var(--fg,#1b1f24)}
.wf .wf-cut{fill:var(--fg,#1b1f24);opacity:.6}.wf .wf-marker{stroke-width:1.5;stroke-dasharray:4 3}
.wf .wf-m-cancel{stroke:var(--bad,#b3261e)}.wf .wf-m-turn{stroke:#8250df}.wf .wf-now{stroke:var(--warn,#9a6700);stroke-dasharray:2 2}
.wf a.wf-link .wf-seg{cursor:pointer}.wf a.wf-link:hover .wf-seg,.wf a.wf-link:focus .wf-seg{opacity:1;stroke:var(--fg,#1b1f24)}`;

/**
 * The SVG of a laid-out waterfall.
 *
 * @example
 * ```ts
 * const svg = waterfallSvg(layout, run.runId, { run: (id) => `/ui/runs/${encodeURIComponent(id)}`, view: (v) => `?from=${v.from}&to=${v.to}` });
 * ```
 */
export function waterfallSvg(layout: WaterfallLayout, runId: string, links: WaterfallLinks): string {
  const { width, height } = layout;
  const desc = `${layout.itemCount} steps on ${layout.laneCount} lanes, from ${instantText(layout.from)} to ${instantText(layout.to)} (${durationText(layout.to - layout.from)})${layout.pages > 1 ? `; lanes page ${layout.page} of ${layout.pages}` : ""}. The table below lists every step.`;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" class="wf wf-chart" viewBox="0 0 ${width} ${height}" width="100%" role="group" aria-labelledby="wf-title wf-desc" data-lanes="${layout.laneCount}" data-from="${layout.from}" data-to="${layout.to}">`,
    `<title id="wf-title">${e(`Timeline of run ${runId}`)}</title><desc id="wf-desc">${e(desc)}</desc>`,
    `<style>${STYLE}</style>`,
    `<defs><pattern id="wf-hatch" width="4" height="4" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect class="wf-hatch-bg" width="4" height="4"/><line class="wf-hatch-line" x1="0" y1="0" x2="0" y2="4"/></pattern></defs>`,
    axis(layout, links),
    ...layout.lanes.map((lane) => laneSvg(lane, links)),
    ...layout.markers.map((m) => `<line class="wf-marker wf-m-${m.kind}" x1="${n(m.x)}" x2="${n(m.x)}" y1="${GEOMETRY.top - 6}" y2="${height - 4}"><title>${e(`${m.text} (${instantText(m.at)})`)}</title></line>`),
    layout.nowX === undefined ? "" : `<line class="wf-now" x1="${n(layout.nowX)}" x2="${n(layout.nowX)}" y1="${GEOMETRY.top - 6}" y2="${height - 4}"><title>now</title></line>`,
    "</svg>",
  ];
  return out.join("");
}

/**
 * History entries in, SVG string out: {@link layoutWaterfall} then {@link waterfallSvg}.
 *
 * @example
 * ```ts
 * const { run, entries } = await client.history("order-8472");
 * const svg = renderWaterfall(run, entries, Date.now(), {}, { run: (id) => `/ui/runs/${id}`, view: () => "" });
 * ```
 */
export function renderWaterfall(run: WaterfallRun, entries: readonly HistoryEntry[], now: number, view: WaterfallView, links: WaterfallLinks): string {
  return waterfallSvg(layoutWaterfall(run, entries, now, view), run.runId, links);
}

function axis(layout: WaterfallLayout, links: WaterfallLinks): string {
  const y = GEOMETRY.top - 4;
  const ticks = layout.ticks.map((t) => `<line x1="${n(t.x)}" x2="${n(t.x)}" y1="${y - 4}" y2="${layout.height - 4}" opacity=".5"/>${t.x + 3 + t.label.length * CHAR <= layout.width ? `<text x="${n(t.x + 3)}" y="${y - 8}">${e(t.label)}</text>` : ""}`);
  const slices = layout.slices.map((s) => `<a href="${e(links.view(s.view))}"><rect class="wf-slice" x="${n(s.x0)}" y="0" width="${n(Math.max(1, s.x1 - s.x0))}" height="${y}"><title>${e(s.text)}</title></rect></a>`);
  return `<g class="wf-axis"><text x="6" y="${y - 8}">${e(layout.zoomed ? "window" : "since first step")}</text>${ticks.join("")}${slices.join("")}</g>`;
}

function laneSvg(lane: PlacedLane, links: WaterfallLinks): string {
  const label = lane.label.length > 26 ? `${lane.label.slice(0, 25)}…` : lane.label;
  const head = `<rect class="wf-row" x="0" y="${lane.y}" width="${GEOMETRY.width}" height="${GEOMETRY.laneHeight - 2}"/><text class="wf-label" x="6" y="${lane.y + 14}">${e(label)}<title>${e(`${lane.label}: ${lane.about}`)}</title></text>`;
  const bars = lane.bars.map((b) => ("item" in b ? itemSvg(b, lane.y, links) : clusterSvg(b, lane.y, links)));
  return `<g class="wf-lane" data-lane="${lane.index}" data-label="${e(lane.label)}">${head}${bars.join("")}</g>`;
}

function itemSvg(p: PlacedItem, laneY: number, links: WaterfallLinks): string {
  const i = p.item;
  const top = laneY + (GEOMETRY.laneHeight - 2 - GEOMETRY.barHeight) / 2;
  const shapes = p.segments.map((s) => {
    const w = Math.max(1, s.x1 - s.x0);
    if (s.kind === "retry") return `<line class="wf-seg wf-retry" x1="${n(s.x0)}" x2="${n(s.x0 + w)}" y1="${n(top + GEOMETRY.barHeight / 2)}" y2="${n(top + GEOMETRY.barHeight / 2)}"/>`;
    const thin = s.kind === "sleep" || s.kind === "wait" ? 4 : 0;
    const cut = s.cutRight ? `<path class="wf-cut" d="M${n(s.x0 + w)} ${n(top)}l5 ${GEOMETRY.barHeight / 2}l-5 ${GEOMETRY.barHeight / 2}z"/>` : "";
    return `<rect class="wf-seg wf-${s.kind}" x="${n(s.x0)}" y="${n(top + thin)}" width="${n(w)}" height="${GEOMETRY.barHeight - 2 * thin}" rx="2"/>${cut}`;
  });
  const label = `${i.compensation ? "↺ " : ""}${i.label}`;
  // On the widest drawn piece (a retried step's last attempt, a child's wait), if it fits there.
  const widest = p.segments.filter((s) => s.kind !== "retry").reduce<PlacedItem["segments"][number] | undefined>((a, s) => (!a || s.x1 - s.x0 > a.x1 - a.x0 ? s : a), undefined);
  const need = label.length * CHAR;
  const inside = widest !== undefined && need <= widest.x1 - widest.x0 - 6;
  const after = !inside && need + 10 <= p.room;
  const text = inside
    ? `<text class="wf-text${widest.kind === "sleep" || widest.kind === "wait" ? " out" : ""}" x="${n(widest.x0 + 3)}" y="${n(top + 11)}">${e(label)}</text>`
    : after
      ? `<text class="wf-text out" x="${n(p.x1 + (p.segments.at(-1)?.cutRight ? 9 : 4))}" y="${n(top + 11)}">${e(label)}</text>`
      : "";
  const title = [`${i.stepId} — ${i.kind}, ${i.status}`, ...i.segments.map((s) => s.text), ...(i.childRunId ? [`child run ${i.childRunId}: select to open its page`] : []), ...(i.compensation ? [`compensation: ${i.compensation}`] : [])].join("\n");
  const classes = `wf-item wf-k-${i.kind} wf-s-${i.status.replace(/[^a-z]+/g, "-")}${i.compensation ? " wf-comp" : ""}`;
  const group = `<g class="${classes}" data-step="${e(i.stepId)}" data-kind="${i.kind}" data-status="${e(i.status)}"${i.childRunId ? ` data-child="${e(i.childRunId)}"` : ""}><title>${e(title)}</title>${shapes.join("")}${text}</g>`;
  return i.childRunId ? `<a class="wf-link" href="${e(links.run(i.childRunId))}">${group}</a>` : group;
}

function clusterSvg(c: PlacedCluster, laneY: number, links: WaterfallLinks): string {
  const top = laneY + (GEOMETRY.laneHeight - 2 - GEOMETRY.barHeight) / 2;
  const first = c.items[0]?.stepId ?? "";
  const last = c.items.at(-1)?.stepId ?? "";
  const failed = c.items.filter((i) => i.status === "failed").length;
  const pad = Math.max(1, Math.round((c.to - c.from) * 0.05));
  const title = `${c.items.length} steps, ${first} … ${last}, from ${instantText(c.from)} over ${durationText(c.to - c.from)}${failed ? `, ${failed} failed` : ""}: select to zoom in`;
  return `<a href="${e(links.view({ from: c.from - pad, to: c.to + pad }))}"><g class="wf-cluster-group" data-count="${c.items.length}"><title>${e(title)}</title><rect class="wf-cluster" x="${n(c.x0)}" y="${n(top)}" width="${n(Math.max(GEOMETRY.minPx, c.x1 - c.x0 - 1))}" height="${GEOMETRY.barHeight}"/></g></a>`;
}

const LEGEND: ReadonlyArray<readonly [shape: string, text: string]> = [
  ["wf-ok", "attempt that succeeded"],
  ["wf-failed", "step failed for good"],
  ["wf-attempt", "failed attempt, then its retry delay (dashes)"],
  ["wf-running", "running now"],
  ["wf-wait", "wait, labelled with who answered"],
  ["wf-sleep", "sleep, to its wake time"],
  ["wf-child", "child run: select to open it"],
  ["wf-cluster", "steps too short to draw: select to zoom in"],
];

/**
 * The waterfall's key, as a small SVG of its own (same classes). The compensation rule is
 * spelled out: what started after the cancellation was delivered or a step failed for good.
 *
 * @example
 * ```ts
 * const key = waterfallLegend();
 * ```
 */
export function waterfallLegend(): string {
  const cols = 3;
  const items = [...LEGEND.map(([cls, text], k) => ({ cls, text, k })), { cls: "comp", text: "↺ compensation: started after the cancellation was delivered, or (in a run that failed) after its first step failed for good", k: Math.ceil(LEGEND.length / cols) * cols }];
  const rowH = 18;
  const colW = GEOMETRY.width / cols;
  const parts = items.map(({ cls, text, k }) => {
    const x = (k % cols) * colW + 6;
    const y = Math.floor(k / cols) * rowH + 4;
    const swatch = cls === "comp" ? `<g class="wf-comp"><rect class="wf-seg wf-ok" x="${x}" y="${y}" width="22" height="10" rx="2"/></g>` : `<rect class="${cls === "wf-cluster" ? cls : `wf-seg ${cls}`}" x="${x}" y="${y}" width="22" height="10" rx="2"/>${cls === "wf-attempt" ? `<line class="wf-seg wf-retry" x1="${x + 22}" x2="${x + 40}" y1="${y + 5}" y2="${y + 5}"/>` : ""}`;
    return `${swatch}<text x="${x + 46}" y="${y + 9}">${e(text)}</text>`;
  });
  const height = (Math.floor((items.at(-1)?.k ?? 0) / cols) + 1) * rowH + 6;
  return `<svg xmlns="http://www.w3.org/2000/svg" class="wf wf-legend" viewBox="0 0 ${GEOMETRY.width} ${height}" width="100%" role="img" aria-label="Key to the timeline: ${e(items.map((i) => i.text).join("; "))}">${parts.join("")}</svg>`;
}
