/** Renders a run's history as a timeline table (the CLI's `runs show`, the demo's summary). */
import type { HistoryEntry } from "../client.ts";
import type { RunMeta } from "../ports.ts";
import { elapsedText, instantText } from "../http/display.ts";

/** One row of a run's timeline: a step with its kind, status, attempts, duration and a preview of its outcome. */
export interface TimelineRow {
  step: string;
  kind: string;
  status: string;
  attempts: string;
  duration: string;
  preview: string;
}

/** One row per step (failed attempts folded in), plus signals no wait consumed. */
export function timelineRows(entries: readonly HistoryEntry[]): TimelineRow[] {
  const rows: TimelineRow[] = [];
  const resolutions = new Map<string, HistoryEntry["record"] & { type: "resolution" }>();
  const signals = new Map<string, HistoryEntry["record"] & { type: "signal" }>();
  const attempts = new Map<string, number>();
  const late = new Set<string>();
  for (const e of entries) {
    const r = e.record;
    if (r?.type === "place") late.add(r.stepId);
    if (r?.type === "resolution") resolutions.set(r.stepId, r);
    if (r?.type === "signal") signals.set(r.signalId, r);
    if (r?.type === "attempt") attempts.set(r.stepId, Math.max(attempts.get(r.stepId) ?? 0, r.attempt));
  }
  const consumed = new Set([...resolutions.values()].flatMap((r) => (r.signalId ? [r.signalId] : [])));
  for (const e of entries) {
    const r = e.record;
    if (!r) {
      rows.push({ step: e.key, kind: "?", status: "unreadable", attempts: "", duration: "", preview: e.unreadable ?? "" });
      continue;
    }
    if (r.type === "step" && r.kind === "run") {
      // Honest counts: an at-least-once body may also have run in invocations that died before
      // recording it (`possibleReruns`); an at-most-once body ran exactly `attempts` times.
      const counted = r.semantics === "at-most-once" ? `${r.attempts} (at-most-once)` : r.possibleReruns ? `${r.attempts} (+ up to ${r.possibleReruns} lost to crashes)` : String(r.attempts);
      // Late: written by an invocation that had lost its lease, after the holder went on without it.
      const status = late.has(r.stepId) ? `${r.status}, late` : r.status;
      rows.push({ step: r.stepId, kind: "run", status, attempts: counted, duration: elapsedText(r.startedAt, r.at), preview: r.status === "ok" ? preview(r.result) : `${r.error?.name}: ${r.error?.message}` });
    } else if (r.type === "step" && r.kind === "sleep") {
      rows.push({ step: r.stepId, kind: "sleep", status: "until", attempts: "", duration: elapsedText(r.at, r.wakeAt), preview: instantText(r.wakeAt) });
    } else if (r.type === "step" && r.kind === "wait") {
      const res = resolutions.get(r.stepId);
      const sig = res?.signalId ? signals.get(res.signalId) : undefined;
      const status = !res ? "waiting" : res.via === "timeout" ? "timed out" : res.via === "cancelled" ? "cancelled" : "signalled";
      rows.push({ step: r.stepId, kind: "wait", status, attempts: "", duration: res ? elapsedText(r.at, res.at) : "", preview: sig ? preview(sig.payload) : r.timeoutAt !== undefined ? `timeout ${instantText(r.timeoutAt)}` : "" });
    } else if (r.type === "attempt" && !entries.some((x) => x.record?.type === "step" && x.record.stepId === r.stepId)) {
      if (attempts.get(r.stepId) === r.attempt) {
        rows.push({ step: r.stepId, kind: "run", status: "retrying", attempts: String(r.attempt), duration: "", preview: `${r.error.name}: ${r.error.message}; next ${instantText(r.retryAt)}` });
      }
    } else if (r.type === "start" && !entries.some((x) => x.record?.type === "step" && x.record.stepId === r.stepId) && !entries.some((x) => x.record?.type === "start" && x.record.stepId === r.stepId && x.record.attempt > r.attempt)) {
      rows.push({ step: r.stepId, kind: "run", status: "started", attempts: `${r.attempt} (at-most-once)`, duration: "", preview: `since ${instantText(r.at)}` });
    } else if (r.type === "signal" && !consumed.has(r.signalId)) {
      rows.push({ step: r.name, kind: "signal", status: e.lateFor ? `late for ${e.lateFor}` : "buffered", attempts: "", duration: "", preview: preview(r.payload) });
    }
  }
  return rows;
}

/** The run header and its timeline as text. */
export function formatTimeline(run: RunMeta, entries: readonly HistoryEntry[]): string {
  const header = [
    `run ${run.runId}  workflow ${run.workflow}  status ${run.status}`,
    `created ${instantText(run.createdAt)}  invocations ${run.invocations}` +
      (run.waitingFor ? `  waiting for ${run.waitingFor}` : "") +
      (run.wakeAt !== undefined && (run.status === "suspended" || run.status === "queued") ? `  wakes ${instantText(run.wakeAt)}` : ""),
  ];
  const rows = timelineRows(entries);
  const table = [["#", "step", "kind", "status", "attempts", "duration", "result"], ...rows.map((r, i) => [String(i + 1), r.step, r.kind, r.status, r.attempts, r.duration, r.preview])];
  const widths = table[0]!.map((_, c) => Math.max(...table.map((row) => (row[c] ?? "").length)));
  const lines = table.map((row) => row.map((cell, c) => (c === row.length - 1 ? cell : cell.padEnd(widths[c] ?? 0))).join("  ").trimEnd());
  const outcome = run.status === "completed" ? [`result ${preview(run.result, 200)}`] : run.error ? [`error ${run.error.name}: ${run.error.message}`] : [];
  return [...header, "", ...lines, ...(outcome.length ? ["", ...outcome] : [])].join("\n");
}

function preview(value: unknown, max = 60): string {
  const text = value === undefined ? "" : JSON.stringify(value);
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
