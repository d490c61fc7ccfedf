/**
 * A child's side of a parent in another deployment: the direct invocations a parent's function
 * sends this one (lib/aws/remote-children.ts), and what they answer.
 *
 *   { waymark: "child-start", v: 1, workflow, runId, input, parent?: { runId, waitId, incarnation?, replyTo } }
 *   { waymark: "child-cancel", v: 1, runId, reason }
 *
 * Answers: `{ ok: true }`; `{ ok: false, hosted: false }` when this function does not host the
 * workflow (or, for a cancel, does not know the run), so the parent tries its next child
 * function; `{ ok: false, error }` for the caller's mistakes (invalid input, a run id taken by
 * another workflow), which retrying cannot fix. Anything retryable is thrown: Lambda reports a
 * `FunctionError`, and the parent's step retries.
 */
import { askToCancel, childPort, type RunOps } from "../core/engine-runs.ts";
import { InvalidInputError, type SerializedError, WaymarkError } from "../core/errors.ts";
import * as z from "../core/shape.ts";
import { TERMINAL_STATUSES } from "../ports.ts";
import type { AwsRuntime } from "./runtime.ts";

/** What a child function answers a parent. */
export type ChildAnswer = { ok: true } | { ok: false; hosted: false } | { ok: false; error: SerializedError & { issues?: ReadonlyArray<{ path: string; message: string }> } };

export const CHILD_START = "child-start";
export const CHILD_CANCEL = "child-cancel";

const Parent = z.object({ runId: z.string().min(1), waitId: z.string().min(1), incarnation: z.number().int().positive().optional(), replyTo: z.string().min(1) });
const StartEvent = z.object({ v: z.literal(1), workflow: z.string().min(1), runId: z.string().min(1), input: z.unknown().optional(), parent: Parent.optional() });
const CancelEvent = z.object({ v: z.literal(1), runId: z.string().min(1), reason: z.string() });

/** The run operations of this function's runtime (its journal, its queue, its workflows, its remote children). */
function opsOf(rt: AwsRuntime): RunOps {
  return { store: rt.store, clock: rt.clock, wakes: rt.wakes, workflows: rt.workflows, remote: rt.remote };
}

/**
 * Starts a child run here for a parent in another function: idempotent, and the child's parent
 * record names the parent's wake queue, where its end is sent. A child already over has its end
 * sent again.
 */
export async function startChildByInvoke(rt: AwsRuntime, event: unknown): Promise<ChildAnswer> {
  return answer(async () => {
    const e = parse(StartEvent, event, "child-start");
    if (!rt.workflows.has(e.workflow)) return { ok: false, hosted: false };
    await childPort(opsOf(rt), 1).start({ workflow: e.workflow, runId: e.runId, input: e.input, ...(e.parent ? { parent: e.parent } : {}) });
    rt.log({ level: "info", event: "child-start", runId: e.runId, workflow: e.workflow, ...(e.parent ? { parent: e.parent.runId } : {}) });
    return { ok: true };
  });
}

/** Asks a run here to cancel, for its parent in another function. */
export async function cancelChildByInvoke(rt: AwsRuntime, event: unknown): Promise<ChildAnswer> {
  return answer(async () => {
    const e = parse(CancelEvent, event, "child-cancel");
    const run = await rt.store.getRun(e.runId);
    if (!run) return { ok: false, hosted: false };
    if (!TERMINAL_STATUSES.has(run.status)) await askToCancel(opsOf(rt), e.runId, run.incarnation, e.reason);
    return { ok: true };
  });
}

function parse<T>(shape: z.Shape<T>, event: unknown, what: string): T {
  const parsed = shape.safeParse(event);
  if (parsed.success) return parsed.data;
  throw new InvalidInputError(`invalid ${what} event`, parsed.error.issues.map((i) => ({ path: i.path.map(String).join("."), message: i.message })));
}

async function answer(work: () => Promise<ChildAnswer>): Promise<ChildAnswer> {
  try {
    return await work();
  } catch (err) {
    if (!(err instanceof WaymarkError) || err.retryable) throw err;
    const fields = Object.fromEntries(Object.entries(err).filter(([k, v]) => k !== "retryable" && k !== "issues" && (typeof v === "string" || typeof v === "number")));
    return { ok: false, error: { name: err.name, message: err.message, ...(Object.keys(fields).length > 0 ? { fields } : {}), ...(err instanceof InvalidInputError ? { issues: err.issues } : {}) } };
  }
}
