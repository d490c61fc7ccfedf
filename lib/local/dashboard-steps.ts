/**
 * A run's history as the waterfall draws it (dashboard-waterfall.ts): one item per step, each
 * made of segments on a time axis — a `run` step's failed attempts, the retry delays between
 * them and its last attempt; a sleep to its wake time; a wait to whoever answered it (a signal
 * and its sender, the timeout, the cancellation); a child's start and the wait for its end,
 * linked to the child's run. Pure: history entries in, items out.
 *
 * Compensations are marked by one rule read off the journal. The run's **turn** is the first of:
 * the cancellation delivered (a wait or sleep resolved `cancelled`, or a step that failed with
 * `CancelledError`), or — in a run that then ended `failed` — the first step that failed for good
 * (a `failed` step record; a failed attempt that was retried is no turn). Every step that started
 * at or after the turn is marked: after a cancellation the engine runs only the workflow's
 * compensations, and steps between a failure and the run's failure are its clean-up. A run that
 * caught a failure and went on to complete (or is still running) has recovered, not compensated:
 * nothing is marked for its failure. Steps already running at the turn are not marked.
 */
import type { HistoryEntry } from "../client.ts";
import { CHILD_SIGNAL, childRunIdOf } from "../core/children.ts";
import type { AttemptRecord, CancelRecord, ResolutionRecord, RunStepRecord, SignalRecord, SleepRecord, StartRecord, WaitRecord } from "../core/records.ts";
import { elapsedText, instantText, isInstant } from "../http/display.ts";
import type { RunStatus } from "../ports.ts";

/** What a piece of a step's bar shows. */
export type SegmentKind = "ok" | "failed" | "attempt" | "retry" | "running" | "sleep" | "wait" | "child";

export interface Segment {
  kind: SegmentKind;
  start: number;
  /** Its end, or when it is due to end (a wake time); `undefined` while it goes on with no end known. */
  end: number | undefined;
  /** One line for the bar's title. */
  text: string;
}

export interface TimelineItem {
  stepId: string;
  /** The sub-context the step ran in: `""` for the run's own steps, `<mapId>[<index>]` for a map item's, `<id>[<branch>]` for a parallel branch's. */
  context: string;
  /** What the contexts of one fan-out share (`<mapId>`); `""` for the run's own steps. */
  family: string;
  kind: "run" | "sleep" | "wait" | "child";
  /** ok, failed, retrying, running, slept, sleeping, signalled, timed out, cancelled, waiting, started, or a child's end. */
  status: string;
  /** Short text drawn on the bar when it fits. */
  label: string;
  segments: Segment[];
  start: number;
  /** The last segment's end; `undefined` while the step goes on with no end known. */
  end: number | undefined;
  childRunId?: string;
  /** Why the item is marked a compensation, if it is. */
  compensation?: string;
}

/** A moment drawn across every lane. */
export interface Marker {
  at: number;
  kind: "cancel" | "turn";
  text: string;
}

export interface RunTimeline {
  items: TimelineItem[];
  markers: Marker[];
  /** Step ids left out of the picture: their times are outside the date range (the table lists them). */
  undrawn: string[];
}

/**
 * The sub-context of a step id: its longest prefix that ends in a sub-context segment, `[<label>]`
 * (a `step.map` item or a `step.parallel` branch), or, in runs recorded by the old map, an index
 * segment (`label/3`).
 *
 * @example
 * ```ts
 * contextOf("label[3]/charge"); // { context: "label[3]", family: "label" }
 * contextOf("trip[flights]/book"); // { context: "trip[flights]", family: "trip" }
 * contextOf("label/3/charge"); // { context: "label/3", family: "label" } (the old map)
 * contextOf("reserve"); // { context: "", family: "" }
 * ```
 */
export function contextOf(stepId: string): { context: string; family: string } {
  const scoped = /^(.*)\[([^\[\]/]+)\](?=\/|$)/.exec(stepId);
  if (scoped) return { context: `${scoped[1] ?? ""}[${scoped[2] ?? ""}]`, family: scoped[1] ?? "" };
  const m = /^(.*)\/(\d+)(?=\/|$)/.exec(stepId);
  return m ? { context: `${m[1] ?? ""}/${m[2] ?? ""}`, family: m[1] ?? "" } : { context: "", family: "" };
}

/**
 * The items and markers of a run's history.
 *
 * @example
 * ```ts
 * const { run, entries } = await client.history("order-8472");
 * const { items } = timelineOf(entries, run);
 * ```
 */
export function timelineOf(entries: readonly HistoryEntry[], run: { runId: string; status: RunStatus; incarnation?: number | undefined }): RunTimeline {
  const { runId, incarnation = 1 } = run;
  const j = index(entries);
  const items: TimelineItem[] = [];
  const undrawn: string[] = [];
  const add = (item: TimelineItem | undefined, stepId: string) => {
    if (item && isInstant(item.start)) items.push(item);
    else undrawn.push(stepId);
  };
  const childWaits = new Set<string>();
  for (const id of j.stepIds) {
    if (!id.endsWith(":start")) continue;
    const base = id.slice(0, -":start".length);
    const wait = j.steps.get(base);
    if (wait?.kind === "wait" && wait.signal === CHILD_SIGNAL) childWaits.add(base);
  }
  for (const id of j.stepIds) {
    if (childWaits.has(id)) continue;
    const step = j.steps.get(id);
    if (id.endsWith(":start") && (step === undefined || step.kind === "run")) add(childItem(j, id, runId, incarnation), id);
    else if (step?.kind === "sleep") add(sleepItem(j, step), id);
    else if (step?.kind === "wait") add(waitItem(j, step), id);
    else add(runItem(j, id), id);
  }
  items.sort((a, b) => a.start - b.start || (a.stepId < b.stepId ? -1 : 1));
  const markers: Marker[] = [];
  if (j.cancel && isInstant(j.cancel.at)) markers.push({ at: j.cancel.at, kind: "cancel", text: `cancel requested: ${j.cancel.reason}` });
  const turn = turnOf(j, run.status === "failed");
  if (turn) {
    markers.push({ at: turn.at, kind: "turn", text: turn.text });
    for (const item of items) if (item.stepId !== turn.stepId && item.start >= turn.at) item.compensation = `started after ${turn.text}`;
  }
  return { items, markers, undrawn };
}

interface Indexed {
  stepIds: string[];
  steps: Map<string, RunStepRecord | SleepRecord | WaitRecord>;
  attempts: Map<string, AttemptRecord[]>;
  starts: Map<string, StartRecord[]>;
  resolutions: Map<string, ResolutionRecord>;
  signals: Map<string, SignalRecord>;
  cancel: CancelRecord | undefined;
}

function index(entries: readonly HistoryEntry[]): Indexed {
  const j: Indexed = { stepIds: [], steps: new Map(), attempts: new Map(), starts: new Map(), resolutions: new Map(), signals: new Map(), cancel: undefined };
  const seen = new Set<string>();
  const see = (id: string) => {
    if (!seen.has(id)) j.stepIds.push(id);
    seen.add(id);
  };
  for (const e of entries) {
    const r = e.record;
    switch (r?.type) {
      case "step":
        see(r.stepId);
        j.steps.set(r.stepId, r);
        break;
      case "attempt":
        see(r.stepId);
        j.attempts.set(r.stepId, [...(j.attempts.get(r.stepId) ?? []), r]);
        break;
      case "start":
        see(r.stepId);
        j.starts.set(r.stepId, [...(j.starts.get(r.stepId) ?? []), r]);
        break;
      case "resolution":
        j.resolutions.set(r.stepId, r);
        break;
      case "signal":
        j.signals.set(r.signalId, r);
        break;
      case "cancel":
        j.cancel = r;
        break;
      default:
    }
  }
  for (const list of j.attempts.values()) list.sort((a, b) => a.attempt - b.attempt);
  return j;
}

function item(stepId: string, kind: TimelineItem["kind"], status: string, label: string, segments: Segment[]): TimelineItem {
  const last = segments.at(-1);
  return { stepId, ...contextOf(stepId), kind, status, label, segments, start: segments[0]?.start ?? Number.NaN, end: last?.end };
}

/** A `run` step: its failed attempts and their retry delays, then the last attempt (or the one running). */
function runItem(j: Indexed, stepId: string): TimelineItem | undefined {
  const step = j.steps.get(stepId);
  const done = step?.kind === "run" ? step : undefined;
  const segments: Segment[] = [];
  for (const a of j.attempts.get(stepId) ?? []) {
    segments.push({ kind: "attempt", start: a.startedAt, end: a.at, text: `attempt ${a.attempt} failed after ${elapsedText(a.startedAt, a.at)}: ${a.error.name}: ${a.error.message}` });
    segments.push({ kind: "retry", start: a.at, end: isInstant(a.retryAt) ? a.retryAt : undefined, text: `retry delay until ${instantText(a.retryAt)} (${elapsedText(a.at, a.retryAt)})` });
  }
  const started = (j.starts.get(stepId) ?? []).at(-1);
  if (done) {
    const how = done.status === "ok" ? "succeeded" : `failed: ${done.error?.name ?? "Error"}: ${done.error?.message ?? ""}`;
    segments.push({ kind: done.status === "ok" ? "ok" : "failed", start: done.startedAt, end: done.at, text: `attempt ${done.attempts} ${how} after ${elapsedText(done.startedAt, done.at)}` });
    return item(stepId, "run", done.status, stepId, segments);
  }
  if (started && !(j.attempts.get(stepId) ?? []).some((a) => a.attempt >= started.attempt)) {
    segments.push({ kind: "running", start: started.at, end: undefined, text: `attempt ${started.attempt} running since ${instantText(started.at)} (at-most-once)` });
    return item(stepId, "run", "running", stepId, segments);
  }
  return segments.length ? item(stepId, "run", "retrying", stepId, segments) : undefined;
}

function sleepItem(j: Indexed, s: SleepRecord): TimelineItem {
  const res = j.resolutions.get(s.stepId);
  if (res?.via === "cancelled") {
    return item(s.stepId, "sleep", "cancelled", s.stepId, [{ kind: "sleep", start: s.startedAt ?? s.at, end: res.at, text: `sleep cancelled at ${instantText(res.at)} (was to wake at ${instantText(s.wakeAt)})` }]);
  }
  const from = s.startedAt ?? s.at;
  return item(s.stepId, "sleep", "sleep", s.stepId, [{ kind: "sleep", start: from, end: isInstant(s.wakeAt) ? s.wakeAt : undefined, text: `sleep until ${instantText(s.wakeAt)} (${elapsedText(from, s.wakeAt)})` }]);
}

/** Who answered a wait, in words: the signal and its sender, the timeout, or the cancellation. */
function answerOf(j: Indexed, w: WaitRecord, res: ResolutionRecord | undefined): { status: string; by: string; text: string } {
  const deadline = w.timeoutAt === undefined ? "no timeout" : `times out at ${instantText(w.timeoutAt)}`;
  if (!res) return { status: "waiting", by: "", text: `waiting for signal "${w.signal}" since ${instantText(w.at)}, ${deadline}` };
  if (res.via === "timeout") return { status: "timed out", by: "timeout", text: `timed out at ${instantText(res.at)} after ${elapsedText(w.at, res.at)}: no signal "${w.signal}" came` };
  if (res.via === "cancelled") return { status: "cancelled", by: "cancelled", text: `cancelled at ${instantText(res.at)} while waiting for "${w.signal}"` };
  const sig = res.signalId === undefined ? undefined : j.signals.get(res.signalId);
  const sender = sig?.sender ? `${sig.sender.id}${sig.sender.verified ? " (verified)" : " (as they said)"}` : "";
  const by = sig?.sender?.id ?? res.signalId ?? "signal";
  return { status: "signalled", by, text: `answered at ${instantText(res.at)} after ${elapsedText(w.at, res.at)} by signal "${sig?.name ?? w.signal}" ${res.signalId ?? ""}${sender ? ` from ${sender}` : ""}` };
}

function waitItem(j: Indexed, w: WaitRecord): TimelineItem {
  const res = j.resolutions.get(w.stepId);
  const a = answerOf(j, w, res);
  return item(w.stepId, "wait", a.status, a.by ? `${w.stepId} ← ${a.by}` : w.stepId, [{ kind: "wait", start: w.at, end: res?.at, text: a.text }]);
}

/** `<id>:start` (the journaled start of a child) and, for `step.invoke`, the wait `<id>` for its end. */
function childItem(j: Indexed, startId: string, runId: string, incarnation: number): TimelineItem | undefined {
  const base = startId.slice(0, -":start".length);
  const started = runItem(j, startId);
  if (!started) return undefined;
  const step = j.steps.get(startId);
  const recorded = step?.kind === "run" && typeof step.result === "string" ? step.result : undefined;
  const childRunId = recorded ?? childRunIdOf(runId, base, incarnation);
  const segments = started.segments.map((s) => ({ ...s, text: `start: ${s.text}` }));
  const wait = j.steps.get(base);
  let status = started.status === "ok" ? "started" : started.status;
  if (wait?.kind === "wait") {
    const res = j.resolutions.get(base);
    const sig = res?.signalId === undefined ? undefined : j.signals.get(res.signalId);
    const end = typeof sig?.payload === "object" && sig.payload !== null ? String((sig.payload as { status?: unknown }).status ?? "ended") : undefined;
    status = res?.via === "signal" ? `child ${end ?? "ended"}` : res?.via === "cancelled" ? "cancelled" : res ? "timed out" : "child running";
    segments.push({ kind: "child", start: wait.at, end: res?.at, text: res ? `child run ${childRunId} ${status.replace(/^child /, "")} at ${instantText(res.at)}, after ${elapsedText(wait.at, res.at)}` : `waiting for child run ${childRunId} since ${instantText(wait.at)}` });
  }
  return { ...item(base, "child", status, `${base} → ${childRunId}`, segments), childRunId };
}

/** The run's turn: the cancellation delivered, or (in a run that ended failed) the first step that failed for good. */
function turnOf(j: Indexed, failed: boolean): { at: number; stepId: string; text: string } | undefined {
  let turn: { at: number; stepId: string; text: string } | undefined;
  const consider = (at: number, stepId: string, text: string) => {
    if (isInstant(at) && (!turn || at < turn.at)) turn = { at, stepId, text };
  };
  for (const r of j.resolutions.values()) if (r.via === "cancelled") consider(r.at, r.stepId, `the cancellation was delivered at ${r.stepId}`);
  for (const s of j.steps.values()) {
    if (s.kind !== "run" || s.status !== "failed") continue;
    const id = s.stepId.endsWith(":start") ? s.stepId.slice(0, -":start".length) : s.stepId;
    if (s.error?.name === "CancelledError") consider(s.at, id, `the cancellation was delivered at ${id}`);
    else if (failed) consider(s.at, id, `${id} failed`);
  }
  return turn;
}
