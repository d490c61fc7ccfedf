/**
 * The run page's waterfall as pure functions: history entries in, geometry and an SVG string
 * out. Where bars go (time axis, lanes for parallel branches and sub-contexts, attempts and
 * retry delays), what a wait says about who answered, how children link, which steps are
 * compensations, how a 1,000-step run stays readable (collapse, zoom, lane pages), and that
 * every piece of user text is escaped.
 */
import { describe, expect, it } from "vitest";
import type { HistoryEntry } from "../../lib/client.ts";
import type { RunStatus } from "../../lib/ports.ts";
import { contextOf, timelineOf } from "../../lib/local/dashboard-steps.ts";
import { renderWaterfall, waterfallSvg } from "../../lib/local/dashboard-svg.ts";
import { GEOMETRY, PACK_ABOVE, type PlacedCluster, type PlacedItem, type WaterfallLayout, layoutWaterfall, viewOf, waterfallNav } from "../../lib/local/dashboard-waterfall.ts";

const T = Date.UTC(2026, 2, 1, 12);
const PLOT = GEOMETRY.width - GEOMETRY.gutter - GEOMETRY.right;
const xOf = (t: number, from: number, to: number) => GEOMETRY.gutter + ((t - from) / (to - from)) * PLOT;

type Body = Record<string, unknown>;
const keyOf = (r: Body) =>
  r.type === "attempt" ? `attempt#${String(r.stepId)}#${String(r.attempt)}` : r.type === "signal" ? `signal#${String(r.signalId)}` : r.type === "start" ? `start#${String(r.stepId)}#${String(r.attempt)}` : r.type === "cancel" ? "cancel" : `${String(r.type)}#${String(r.stepId)}`;
const entries = (...records: Body[]): HistoryEntry[] => records.map((r) => ({ key: keyOf(r), at: r.at as number, record: { v: 1, ...r } as unknown as HistoryEntry["record"] }));
const ok = (stepId: string, startedAt: number, at: number, extra: Body = {}): Body => ({ type: "step", kind: "run", stepId, status: "ok", result: null, attempts: 1, startedAt, at, ...extra });
const failed = (stepId: string, startedAt: number, at: number, name = "Error", message = "boom"): Body => ({ type: "step", kind: "run", stepId, status: "failed", error: { name, message }, attempts: 1, startedAt, at });
const run = (status: RunStatus, updatedAt: number, runId = "r-1") => ({ runId, status, updatedAt });
const links = { run: (id: string) => `/ui/runs/${encodeURIComponent(id)}`, view: (v: { from?: number; to?: number; lanes?: number }) => `/ui/runs/r-1?from=${v.from ?? ""}&to=${v.to ?? ""}&lanes=${v.lanes ?? ""}` };

const itemsOf = (l: WaterfallLayout) => l.lanes.flatMap((lane) => lane.bars.filter((b): b is PlacedItem => "item" in b).map((b) => ({ lane: lane.label, ...b })));
const bar = (l: WaterfallLayout, stepId: string) => {
  const found = itemsOf(l).find((b) => b.item.stepId === stepId);
  if (!found) throw new Error(`no bar for ${stepId}`);
  return found;
};

describe("the time axis and lanes", () => {
  it("puts sequential steps on one lane, at their times", () => {
    const l = layoutWaterfall(run("completed", T + 400), entries(ok("a", T, T + 100), ok("b", T + 100, T + 300), ok("c", T + 300, T + 400)), T + 10_000);
    expect(l.whole).toEqual({ from: T, to: T + 400 });
    expect(l.lanes.map((x) => x.label)).toEqual(["run"]);
    expect(bar(l, "a").x0).toBeCloseTo(GEOMETRY.gutter);
    expect(bar(l, "a").x1).toBeCloseTo(xOf(T + 100, T, T + 400));
    expect(bar(l, "b").x1).toBeCloseTo(xOf(T + 300, T, T + 400));
    expect(bar(l, "c").x1).toBeCloseTo(GEOMETRY.gutter + PLOT);
    expect(l.nowX).toBeUndefined(); // an ended run has no "now"
    expect(l.ticks[0]).toEqual({ x: GEOMETRY.gutter, label: "0" });
    expect(l.ticks.map((t) => t.label)).toContain("+100 ms");
  });

  it("draws each failed attempt and its retry delay before the last attempt", () => {
    const l = layoutWaterfall(
      run("completed", T + 1_000),
      entries(
        { type: "attempt", stepId: "quote", attempt: 1, error: { name: "Error", message: "busy" }, startedAt: T, at: T + 100, retryAt: T + 500 },
        { type: "attempt", stepId: "quote", attempt: 2, error: { name: "Error", message: "busy" }, startedAt: T + 500, at: T + 600, retryAt: T + 900 },
        ok("quote", T + 900, T + 1_000, { attempts: 3 }),
      ),
      T + 5_000,
    );
    const q = bar(l, "quote");
    expect(q.segments.map((s) => s.kind)).toEqual(["attempt", "retry", "attempt", "retry", "ok"]);
    expect(q.segments[1]?.x0).toBeCloseTo(xOf(T + 100, T, T + 1_000));
    expect(q.segments[1]?.x1).toBeCloseTo(xOf(T + 500, T, T + 1_000));
    expect(q.segments[4]?.x0).toBeCloseTo(xOf(T + 900, T, T + 1_000));
    expect(q.segments[1]?.text).toContain("retry delay until 2026-03-01T12:00:00.500Z (400 ms)");
  });

  it("gives overlapping steps (Promise.all branches) lanes of their own, reused once free", () => {
    const l = layoutWaterfall(run("completed", T + 600), entries(ok("a", T, T + 100), ok("fraud", T + 100, T + 500), ok("stock", T + 100, T + 300), ok("tax", T + 110, T + 200), ok("ship", T + 500, T + 600)), T + 10_000);
    expect(l.lanes.map((x) => x.label)).toEqual(["run", "run ∥ 2", "run ∥ 3"]);
    expect(bar(l, "fraud").lane).toBe("run");
    expect(bar(l, "stock").lane).toBe("run ∥ 2");
    expect(bar(l, "tax").lane).toBe("run ∥ 3");
    expect(bar(l, "ship").lane).toBe("run");
  });

  it("gives each map item (and the steps under it) a lane, after the run's own", () => {
    expect(contextOf("label/3")).toEqual({ context: "label/3", family: "label" });
    expect(contextOf("label/3/charge#2")).toEqual({ context: "label/3", family: "label" });
    expect(contextOf("m/1/sub/2/x")).toEqual({ context: "m/1/sub/2", family: "m/1/sub" });
    expect(contextOf("a/b")).toEqual({ context: "", family: "" });
    // Sub-contexts as step.map and step.parallel journal them now: <id>[<index>]/ and <id>[<branch>]/.
    expect(contextOf("label[3]/charge")).toEqual({ context: "label[3]", family: "label" });
    expect(contextOf("label[3]/charge#2")).toEqual({ context: "label[3]", family: "label" });
    expect(contextOf("trip[flights]/book")).toEqual({ context: "trip[flights]", family: "trip" });
    expect(contextOf("m[1]/sub[2]/x")).toEqual({ context: "m[1]/sub[2]", family: "m[1]/sub" });
    const l = layoutWaterfall(
      run("completed", T + 500),
      entries(ok("prep", T, T + 50), ok("label/1", T + 60, T + 200), ok("label/0", T + 50, T + 150), ok("label/0/charge", T + 150, T + 300), ok("label/0/mail", T + 300, T + 400), ok("done", T + 400, T + 500)),
      T + 10_000,
    );
    expect(l.lanes.map((x) => x.label)).toEqual(["run", "label/0", "label/1"]);
    expect(bar(l, "label/0/charge").lane).toBe("label/0");
    expect(bar(l, "label/0/mail").lane).toBe("label/0");
    expect(bar(l, "done").lane).toBe("run");
    // The same with today's ids: items in index order (10 after 2), branches each on their own.
    const n = layoutWaterfall(
      run("completed", T + 500),
      entries(ok("prep", T, T + 50), ok("label[10]/print", T + 60, T + 200), ok("label[2]/print", T + 50, T + 150), ok("label[2]/mail", T + 150, T + 300), ok("trip[hotel]/book", T + 50, T + 90), ok("done", T + 400, T + 500)),
      T + 10_000,
    );
    expect(n.lanes.map((x) => x.label)).toEqual(["run", "label[2]", "label[10]", "trip[hotel]"]);
    expect(bar(n, "label[2]/mail").lane).toBe("label[2]");
  });

  it(`shares lanes among the items of a fan-out of more than ${PACK_ABOVE}: concurrency 5 draws as 5 lanes`, () => {
    const records: Body[] = [];
    for (let i = 0; i < 100; i++) records.push(ok(`m/${i}`, T + Math.floor(i / 5) * 100, T + Math.floor(i / 5) * 100 + 90));
    const l = layoutWaterfall(run("completed", T + 2_000), entries(...records), T + 10_000);
    expect(l.lanes.map((x) => x.label)).toEqual(["m/… 1", "m/… 2", "m/… 3", "m/… 4", "m/… 5"]);
    expect(l.lanes[0]?.about).toContain("100 items share these lanes");
  });
});

describe("waits, sleeps and children", () => {
  const history = entries(
    ok("reserve", T, T + 100),
    { type: "step", kind: "wait", stepId: "approval", signal: "approval", timeoutAt: T + 3_600_000, at: T + 100 },
    { type: "signal", signalId: "link:1", name: "approval", payload: { approved: true }, sender: { id: "ana@shop.test", verified: true }, at: T + 700 },
    { type: "resolution", stepId: "approval", via: "signal", signalId: "link:1", at: T + 700 },
    { type: "step", kind: "wait", stepId: "second", signal: "approval", timeoutAt: T + 800, at: T + 700 },
    { type: "resolution", stepId: "second", via: "timeout", at: T + 800 },
    { type: "step", kind: "sleep", stepId: "cool-off", wakeAt: T + 1_300, at: T + 800 },
    ok("pay:start", T + 1_300, T + 1_310, { result: "r-1:pay" }),
    { type: "step", kind: "wait", stepId: "pay", signal: "__child", at: T + 1_310 },
    { type: "signal", signalId: "child:r-1:pay", name: "__child", payload: { status: "completed", result: 1 }, at: T + 1_900 },
    { type: "resolution", stepId: "pay", via: "signal", signalId: "child:r-1:pay", at: T + 1_900 },
    ok("audit:start", T + 1_900, T + 1_950, { result: "audit-7" }),
  );

  it("says who answered a wait: the signal and its sender, or the timeout", () => {
    const l = layoutWaterfall(run("completed", T + 2_000), history, T + 10_000);
    const a = bar(l, "approval");
    expect(a.item).toMatchObject({ kind: "wait", status: "signalled", label: "approval ← ana@shop.test" });
    expect(a.segments[0]?.text).toContain('by signal "approval" link:1 from ana@shop.test (verified)');
    expect(a.x1).toBeCloseTo(xOf(T + 700, T, T + 2_000));
    expect(bar(l, "second").item).toMatchObject({ status: "timed out", label: "second ← timeout" });
  });

  it("draws a sleep to its wake time", () => {
    const l = layoutWaterfall(run("completed", T + 2_000), history, T + 10_000);
    const s = bar(l, "cool-off");
    expect([s.x0, s.x1]).toEqual([xOf(T + 800, T, T + 2_000), xOf(T + 1_300, T, T + 2_000)]);
    expect(s.item.segments[0]?.text).toBe("sleep until 2026-03-01T12:00:01.300Z (500 ms)");
  });

  it("draws a sleep from when it began, not from its record's write (at the run's suspension, later)", () => {
    const l = layoutWaterfall(run("suspended", T + 50), entries(ok("slow", T, T + 50), { type: "step", kind: "sleep", stepId: "nap", wakeAt: T + 600, startedAt: T, at: T + 50 }), T + 100);
    const s = bar(l, "nap");
    expect(s.item.segments[0]?.start).toBe(T);
    expect(s.item.segments[0]?.text).toBe("sleep until 2026-03-01T12:00:00.600Z (600 ms)");
  });

  it("draws a child as its start and the wait for its end, linked to the child's page", () => {
    const l = layoutWaterfall(run("completed", T + 2_000), history, T + 10_000);
    const pay = bar(l, "pay");
    expect(pay.item).toMatchObject({ kind: "child", status: "child completed", childRunId: "r-1:pay" });
    expect(pay.segments.map((s) => s.kind)).toEqual(["ok", "child"]);
    expect(pay.x1).toBeCloseTo(xOf(T + 1_900, T, T + 2_000));
    expect(bar(l, "audit").item).toMatchObject({ kind: "child", status: "started", childRunId: "audit-7" });
    expect(itemsOf(l).some((b) => b.item.stepId === "pay:start")).toBe(false);
    const svg = waterfallSvg(l, "r-1", links);
    expect(svg).toContain('<a class="wf-link" href="/ui/runs/r-1%3Apay">');
    expect(svg).toContain('<a class="wf-link" href="/ui/runs/audit-7">');
  });

  it("runs an open wait and sleep of a suspended run to now, and shows a near wake time in full", () => {
    const open = entries(ok("a", T, T + 100), { type: "step", kind: "wait", stepId: "approval", signal: "approval", at: T + 100 });
    const w = layoutWaterfall(run("suspended", T + 100), open, T + 1_000);
    expect(w.whole).toEqual({ from: T, to: T + 1_000 });
    expect(w.nowX).toBeCloseTo(GEOMETRY.gutter + PLOT);
    expect(bar(w, "approval").segments[0]).toMatchObject({ cutRight: true });
    expect(bar(w, "approval").item.status).toBe("waiting");
    // A wake 500 ms after now (on a 1 s run) is in view; one a year away runs off the edge.
    const near = layoutWaterfall(run("suspended", T + 100), entries(ok("a", T, T + 100), { type: "step", kind: "sleep", stepId: "nap", wakeAt: T + 1_500, at: T + 100 }), T + 1_000);
    expect(near.whole.to).toBe(T + 1_500);
    expect(bar(near, "nap").segments[0]).toMatchObject({ cutRight: false });
    const far = layoutWaterfall(run("suspended", T + 100), entries(ok("a", T, T + 100), { type: "step", kind: "sleep", stepId: "nap", wakeAt: T + 365 * 86_400_000, at: T + 100 }), T + 1_000);
    expect(far.whole.to).toBe(T + 1_000);
    expect(bar(far, "nap").segments[0]).toMatchObject({ cutRight: true });
  });
});

describe("compensations", () => {
  it("marks what started after the cancellation was delivered", () => {
    const history = entries(
      ok("book", T, T + 100),
      { type: "step", kind: "wait", stepId: "approval", signal: "approval", at: T + 100 },
      { type: "cancel", reason: "customer changed their mind", at: T + 400 },
      { type: "resolution", stepId: "approval", via: "cancelled", at: T + 410 },
      ok("refund", T + 410, T + 500),
    );
    const t = timelineOf(history, { runId: "r-1", status: "cancelled" });
    expect(t.items.filter((i) => i.compensation).map((i) => i.stepId)).toEqual(["refund"]);
    expect(t.items.find((i) => i.stepId === "refund")?.compensation).toBe("started after the cancellation was delivered at approval");
    expect(t.markers.map((m) => m.kind)).toEqual(["cancel", "turn"]);
    expect(t.items.find((i) => i.stepId === "approval")).toMatchObject({ status: "cancelled", label: "approval ← cancelled" });
  });

  it("marks what started after the step whose failure failed the run, and nothing in a run that recovered", () => {
    const history = entries(ok("flight", T, T + 100), failed("hotel", T + 100, T + 200), ok("cancel_flight", T + 200, T + 300));
    expect(timelineOf(history, { runId: "r-1", status: "failed" }).items.filter((i) => i.compensation).map((i) => i.stepId)).toEqual(["cancel_flight"]);
    expect(timelineOf(history, { runId: "r-1", status: "completed" }).items.some((i) => i.compensation)).toBe(false);
    const svg = waterfallSvg(layoutWaterfall(run("failed", T + 300), history, T + 1_000), "r-1", links);
    expect(svg).toMatch(/<g class="wf-item wf-k-run wf-s-ok wf-comp" data-step="cancel_flight"/);
    expect(svg).toContain("↺ cancel_flight");
  });

  it("counts a step that failed with CancelledError as the cancellation delivered", () => {
    const history = entries(failed("charge", T, T + 100, "CancelledError", "cancelled"), ok("release", T + 100, T + 150));
    expect(timelineOf(history, { runId: "r-1", status: "cancelled" }).items.find((i) => i.stepId === "release")?.compensation).toBe("started after the cancellation was delivered at charge");
  });
});

describe("a 1,000-step run", () => {
  const thousand = entries(...Array.from({ length: 1_000 }, (_, k) => ok(`step-${k}`, T + k * 10, T + k * 10 + 8)));
  const whole = layoutWaterfall(run("completed", T + 10_000), thousand, T + 20_000);

  it("collapses steps too narrow to see into linked clusters, so the picture stays small", () => {
    const clusters = whole.lanes.flatMap((l) => l.bars.filter((b): b is PlacedCluster => !("item" in b)));
    expect(clusters.length).toBeGreaterThan(0);
    expect(whole.lanes.flatMap((l) => l.bars).length).toBeLessThan(PLOT / GEOMETRY.minPx);
    expect(clusters.reduce((n, c) => n + c.items.length, 0) + itemsOf(whole).length).toBe(1_000);
    // Each cluster zooms somewhere: to at most a twentieth of the run, where its steps are bars.
    for (const c of clusters) expect(c.to - c.from).toBeLessThanOrEqual((whole.to - whole.from) / 20 + 10);
    const first = clusters[0];
    if (!first) throw new Error("no cluster");
    const inside = layoutWaterfall(run("completed", T + 10_000), thousand, T + 20_000, { from: first.from, to: first.to });
    expect(itemsOf(inside).length).toBeGreaterThanOrEqual(first.items.length);
    const svg = waterfallSvg(whole, "r-1", links);
    expect(svg.length).toBeLessThan(200_000);
    expect(svg).toMatch(/<a href="\/ui\/runs\/r-1\?from=\d+&amp;to=\d+&amp;lanes="><g class="wf-cluster-group" data-count="\d+"><title>\d+ steps, step-\d+ … step-\d+/);
  });

  it("zooms to a window by its links: there, each step is a bar of its own", () => {
    const slice = whole.slices[0];
    expect(whole.slices).toHaveLength(GEOMETRY.zoomSlices);
    expect(slice?.view).toEqual({ from: T, to: T + 1_000 });
    const zoomed = layoutWaterfall(run("completed", T + 10_000), thousand, T + 20_000, { from: T + 2_000, to: T + 2_200 });
    expect(zoomed.zoomed).toBe(true);
    expect(itemsOf(zoomed).map((b) => b.item.stepId)).toEqual(Array.from({ length: 21 }, (_, k) => `step-${200 + k}`));
    expect(bar(zoomed, "step-220").segments[0]).toMatchObject({ cutLeft: false, cutRight: true });
    expect(bar(zoomed, "step-210").x0).toBeCloseTo(xOf(T + 2_100, T + 2_000, T + 2_200));
    const across = layoutWaterfall(run("completed", T + 10_000), thousand, T + 20_000, { from: T + 2_004, to: T + 2_100 });
    expect(bar(across, "step-200").segments[0]).toMatchObject({ cutLeft: true, x0: GEOMETRY.gutter });
    expect(waterfallNav(zoomed).map((n) => [n.label, n.view])).toEqual([
      ["← Earlier", { from: T + 1_800, to: T + 2_000 }],
      ["Later →", { from: T + 2_200, to: T + 2_400 }],
      ["Zoom out", { from: T + 1_700, to: T + 2_500 }],
      ["Whole run", {}],
    ]);
  });

  it("pages lanes, 40 at a time, and leaves out lanes with nothing in a zoomed window", () => {
    const wide = entries(...Array.from({ length: 100 }, (_, k) => ok(`branch-${k}`, T + k, T + 1_000 + k)), ok("late", T + 2_000, T + 2_100));
    const p1 = layoutWaterfall(run("completed", T + 2_100), wide, T + 5_000);
    expect([p1.laneCount, p1.pages, p1.lanes.length]).toEqual([100, 3, 40]);
    const p3 = layoutWaterfall(run("completed", T + 2_100), wide, T + 5_000, { lanes: 3 });
    expect(p3.lanes.map((l) => l.index)).toEqual(Array.from({ length: 20 }, (_, k) => 80 + k));
    expect(p3.lanes[0]?.y).toBe(GEOMETRY.top);
    expect(waterfallNav(p3).map((n) => n.label)).toEqual(["← Lanes 41–80"]);
    expect(waterfallNav(p1).map((n) => n.label)).toEqual(["Lanes 41–80 →"]);
    const late = layoutWaterfall(run("completed", T + 2_100), wide, T + 5_000, { from: T + 1_500, to: T + 2_100 });
    expect(late.lanes.map((l) => l.label)).toEqual(["run"]);
    expect(itemsOf(late).map((b) => b.item.stepId)).toEqual(["late"]);
  });

  it("reads the view from the query, ignoring what is not one", () => {
    expect(viewOf({ from: String(T), to: String(T + 5), lanes: "2" })).toEqual({ from: T, to: T + 5, lanes: 2 });
    for (const q of [{ from: "x", to: "5" }, { from: "10", to: "5" }, { from: "1e3", to: "2e3" }, { from: String(9e15), to: String(9.1e15) }, { lanes: "0" }, { lanes: "-1" }]) expect(viewOf(q)).toEqual({});
    const l = layoutWaterfall(run("completed", T + 10_000), thousand, T + 20_000, { from: T - 50_000, to: T + 50_000 });
    expect([l.from, l.to, l.zoomed]).toEqual([T, T + 10_000, false]);
  });
});

describe("text", () => {
  const hostile = `<img src=x onerror="alert(1)">&'`;
  const history = entries(
    ok(hostile, T, T + 100),
    { type: "step", kind: "wait", stepId: "approval", signal: "approval", at: T + 100 },
    { type: "signal", signalId: `</title><script>alert(2)</script>`, name: "approval", payload: {}, sender: { id: `"><svg onload=alert(3)>`, verified: false }, at: T + 200 },
    { type: "resolution", stepId: "approval", via: "signal", signalId: `</title><script>alert(2)</script>`, at: T + 200 },
    failed("pay", T + 200, T + 300, "Error", `<b>card declined</b>`),
    ok("pay2:start", T + 300, T + 310, { result: `x"><script>alert(4)</script>` }),
  );

  it("escapes every piece of user text: step ids, signal ids, senders, errors, child run ids", () => {
    const svg = renderWaterfall(run("failed", T + 400, `run<"&>`), history, T + 1_000, {}, links);
    for (const raw of ["<img", "<script", "<svg onload", "<b>"]) expect(svg).not.toContain(raw);
    expect(svg).toContain("&lt;img src=x onerror=&quot;alert(1)&quot;&gt;&amp;&#39;");
    expect(svg).toContain("&lt;/title&gt;&lt;script&gt;alert(2)&lt;/script&gt;");
    expect(svg).toContain("&quot;&gt;&lt;svg onload=alert(3)&gt;");
    expect(svg).toContain("&lt;b&gt;card declined&lt;/b&gt;");
    expect(svg).toContain(`href="/ui/runs/x%22%3E%3Cscript%3Ealert(4)%3C%2Fscript%3E"`);
    expect(svg).toContain("<title id=\"wf-title\">Timeline of run run&lt;&quot;&amp;&gt;</title>");
    // Every element that opens is one the renderer wrote.
    const tags = new Set([...svg.matchAll(/<([a-z]+)[\s>/]/g)].map((m) => m[1]));
    for (const t of tags) expect(["a", "defs", "desc", "g", "line", "path", "pattern", "rect", "style", "svg", "text", "title"]).toContain(t);
  });

  it("gives every bar a title", () => {
    const svg = waterfallSvg(layoutWaterfall(run("failed", T + 400), history, T + 1_000), "r-1", links);
    const groups = [...svg.matchAll(/<g class="wf-item[^"]*"[^>]*>(<title>[^<]+<\/title>)?/g)];
    expect(groups.length).toBe(4);
    for (const g of groups) expect(g[1]).toBeDefined();
  });

  it("draws no bar for a step whose times are outside the date range, and names it", () => {
    const l = layoutWaterfall(run("suspended", T + 100), entries(ok("early", -8.64e15 - 1, T), ok("a", T, T + 100), { type: "step", kind: "sleep", stepId: "nap", wakeAt: 8.64e15 + 1, at: T + 100 }, { type: "attempt", stepId: "flaky", attempt: 1, error: { name: "Error", message: "x" }, retryAt: Number.NaN, startedAt: T, at: T + 50 }), T + 1_000);
    expect(l.undrawn).toEqual(["early"]);
    expect(bar(l, "nap").segments[0]).toMatchObject({ cutRight: true });
    expect(bar(l, "nap").item.segments[0]?.text).toBe("sleep until invalid date ()");
    expect(bar(l, "flaky").segments.map((s) => [s.kind, s.cutRight])).toEqual([["attempt", false], ["retry", true]]);
    expect(waterfallSvg(l, "r-1", links)).toContain("invalid date");
  });
});
