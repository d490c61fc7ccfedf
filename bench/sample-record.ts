/** The body the raw-INSERT floors write: a step record exactly as the engine writes it. */
import { JOURNAL_VERSION } from "../lib/core/records.ts";

/**
 * The `i`-th step of a sequential run (`s`, `s#2`, …) serialised with every field the engine
 * writes for it: the step's result, attempts and start, its delivery position, and the stamp
 * (journal version, write time, invocation).
 */
export function sampleRecordJson(i: number): string {
  const stepId = i === 0 ? "s" : `s#${i + 1}`;
  const now = Date.now();
  return JSON.stringify({ type: "step", kind: "run", stepId, status: "ok", result: i, attempts: 1, startedAt: now, seq: i + 1, v: JOURNAL_VERSION, at: now, inv: 1 });
}
