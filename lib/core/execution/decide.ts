/**
 * How an execution that has gone quiet ended: the journal and the code disagree (non-determinism,
 * told as precisely as the evidence allows), it continued as new, it was cancelled (after its
 * compensations), it completed or failed, or it is blocked and suspends on its blockers.
 */
import type { Cancellation } from "../cancellation.ts";
import type { DeliveryOrder } from "../delivery-order.ts";
import { serializeError } from "../error-codec.ts";
import { NonDeterminismError, ValueTooLargeError } from "../errors.ts";
import type { Blocker, ExecutionOptions, Outcome } from "../execution-types.ts";
import { assertJsonSafe, jsonBytes } from "../json.ts";

/** How the workflow's own code ended, if it has. */
export type Settled = { ok: true; value: unknown } | { ok: false; error: unknown } | { continued: unknown };

/** What the decision looks at, as the execution's core holds it. */
export interface Quiet {
  fatal: Error | undefined;
  /** A scope whose results wait for one the code never asked for. */
  stalled: DeliveryOrder | undefined;
  /** A scope holds recorded results back until its steps below a hole record theirs: the code has not reached the rest. */
  held: boolean;
  settled: Settled | undefined;
  journal: ExecutionOptions["journal"];
  /** Step ids the code reached in this invocation. */
  visited: ReadonlySet<string>;
  /** Steps a replay-only check met that the journal does not have. */
  newSteps: ReadonlyArray<{ stepId: string; kind: string }>;
  cancellation: Cancellation;
  maxValueBytes: number;
  /** Values may go by reference (a payload store is configured). */
  byReference: boolean;
  blockers: readonly Blocker[];
}

export function decide(q: Quiet): Outcome {
  if (q.fatal) return { type: "failed", error: serializeError(q.fatal), nondeterminism: true };
  const stalled = q.stalled;
  if (stalled) {
    // Results wait for one the code never asked for: the code took another path than the journal.
    const missing = stalled.head ?? "(a step past the journal's end)";
    const err = new NonDeterminismError(missing, `step "${missing}" delivered before the steps after it`, "never reached it");
    return { type: "failed", error: serializeError(err), nondeterminism: true };
  }
  // The code's own diagnosis (a wrapper that checks what a replayed step was asked) is the precise one.
  if (q.settled && "ok" in q.settled && !q.settled.ok && q.settled.error instanceof NonDeterminismError) {
    return { type: "failed", error: serializeError(q.settled.error), nondeterminism: true };
  }
  const skipped = q.held ? undefined : q.journal.stepIds().find((id) => !q.visited.has(id));
  if (skipped) {
    const record = q.journal.step(skipped);
    const inserted = q.newSteps[0];
    if (inserted) {
      const err = new NonDeterminismError(inserted.stepId, `a ${record?.kind ?? "?"} step "${skipped}" next`, `a new ${inserted.kind} step "${inserted.stepId}" instead (guard it with step.patched())`);
      return { type: "failed", error: serializeError(err), nondeterminism: true };
    }
    const err = new NonDeterminismError(skipped, `a ${record?.kind ?? "?"} step "${skipped}"`, "never reached it (renamed or removed?)");
    return { type: "failed", error: serializeError(err), nondeterminism: true };
  }
  if (q.settled && "continued" in q.settled) return { type: "continued", input: q.settled.continued };
  // Cancelled, and the workflow has ended (after its compensations): the run ends cancelled.
  if (q.settled && q.cancellation.wasDelivered) {
    return { type: "cancelled", reason: q.cancellation.reason, ...(q.settled.ok && q.settled.value !== undefined ? { result: q.settled.value } : {}) };
  }
  if (q.settled) {
    if (q.settled.ok) {
      try {
        assertJsonSafe(q.settled.value, "workflow result");
        const size = jsonBytes(q.settled.value);
        const limit = q.maxValueBytes;
        if (size > limit) throw new ValueTooLargeError("the run's result", size, limit, q.byReference ? "payloads" : "journal");
      } catch (err) {
        return { type: "failed", error: serializeError(err) };
      }
      return { type: "completed", result: q.settled.value };
    }
    return { type: "failed", error: serializeError(q.settled.error) };
  }
  return { type: "suspended", blockers: [...q.blockers] };
}
