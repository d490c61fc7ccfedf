/**
 * A child's side of a parent in another deployment: the direct invocations a parent's function
 * sends this one (lib/aws/remote-children.ts), and what they answer.
 *
 *   { waymark: "child-start", v: 1, workflow, runId, input, parent?: { runId, waitId, incarnation?, replyTo } }
 *   { waymark: "child-cancel", v: 1, runId, reason, parent: { runId, waitId, incarnation?, replyTo } }
 *
 * What the event may name is checked, not trusted: `replyTo` must be the wake queue of a parent
 * function granted to start children here (`WAYMARK_PARENT_QUEUES`, set by `grantInvoke`), and a
 * cancel reaches only a run whose parent record names the same parent.
 *
 * Answers: `{ ok: true }`; `{ ok: false, hosted: false }` when this function does not host the
 * workflow (or, for a cancel, does not know the run), so the parent tries its next child
 * function; `{ ok: false, error }` for the caller's mistakes (invalid input, a run id taken by
 * another workflow), which retrying cannot fix. Anything retryable is thrown: Lambda reports a
 * `FunctionError`, and the parent's step retries.
 */
import { InvalidInputError, type SerializedError, WaymarkError } from "../core/errors.ts";
import * as z from "../core/shape.ts";
import { RUN_ID, RUN_ID_RULE } from "../core/run-id.ts";
import { zodIssues } from "../core/zod-issues.ts";
import type { AwsRuntime } from "./runtime.ts";

/** What a child function answers a parent. */
export type ChildAnswer = { ok: true } | { ok: false; hosted: false } | { ok: false; error: SerializedError & { issues?: ReadonlyArray<{ path: string; message: string }> } };

const CHILD_START_ACTION = "child-start";
const CHILD_CANCEL_ACTION = "child-cancel";
export const CHILD_START = CHILD_START_ACTION;
export const CHILD_CANCEL = CHILD_CANCEL_ACTION;

/**
 * The alias a parent function invokes a child's function through (`child.grantInvoke(parent)`
 * grants `lambda:InvokeFunction` on it alone). Invoked through it, the handler takes child starts
 * and cancels and nothing else: the grant cannot be used to hand it wakes, stream records or
 * webhook requests.
 */
export const CHILD_ENTRY_ALIAS = "waymark-children";

/** True when this invocation came through the child-entry alias (Lambda names the qualifier used). */
export function viaChildEntry(invokedFunctionArn: string | undefined): boolean {
  return invokedFunctionArn?.endsWith(`:${CHILD_ENTRY_ALIAS}`) === true;
}

const RunId = z.string().regex(RUN_ID, RUN_ID_RULE);
// Judged whole: a field these shapes do not name (a `Records`, a `requestContext`) is refused, so
// an event cannot pass as a child start and be dispatched as something else.
const Parent = z.object({ runId: RunId, waitId: z.string().min(1).max(300), incarnation: z.number().int().positive().optional(), replyTo: z.string().min(1).max(2048) }).strict();
const StartEvent = z.object({ waymark: z.literal(CHILD_START_ACTION), v: z.literal(1), workflow: z.string().min(1).max(128), runId: RunId, input: z.unknown().optional(), parent: Parent.optional() }).strict();
const CancelEvent = z.object({ waymark: z.literal(CHILD_CANCEL_ACTION), v: z.literal(1), runId: RunId, reason: z.string().max(500), parent: Parent }).strict();

/**
 * Through the child-entry alias, the one thing an event may be: a child start or a child cancel,
 * exactly (no other field). The answer to anything else, whatever it carries.
 */
export function childEntryEvent(event: unknown): { kind: "start" | "cancel" } | { refused: string } {
  if (StartEvent.safeParse(event).success) return { kind: "start" };
  if (CancelEvent.safeParse(event).success) return { kind: "cancel" };
  return { refused: `through ${CHILD_ENTRY_ALIAS} this function takes child starts and cancels only, exactly in their shape` };
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
    if (e.parent) grantedParent(rt, e.parent.replyTo);
    await rt.engine.protocol.children(1).start({ workflow: e.workflow, runId: e.runId, input: e.input, ...(e.parent ? { parent: e.parent } : {}) });
    rt.log({ level: "info", event: "child-start", runId: e.runId, workflow: e.workflow, ...(e.parent ? { parent: e.parent.runId } : {}) });
    return { ok: true };
  });
}

/** Asks a run here to cancel, for its parent in another function. */
export async function cancelChildByInvoke(rt: AwsRuntime, event: unknown): Promise<ChildAnswer> {
  return answer(async () => {
    const e = parse(CancelEvent, event, "child-cancel");
    grantedParent(rt, e.parent.replyTo);
    // Not here, or another parent's child: this function has nothing to cancel for that parent.
    if (!(await rt.engine.protocol.cancelChild(e.runId, e.reason, e.parent))) return { ok: false, hosted: false };
    return { ok: true };
  });
}

/** A parent's reply queue must be one `grantInvoke` let this function send to. */
function grantedParent(rt: AwsRuntime, replyTo: string): void {
  if (!(rt.config.parentQueues ?? []).includes(replyTo)) {
    throw new InvalidInputError("the parent's reply queue is not one this function was granted (grantInvoke)", [{ path: "parent.replyTo", message: "not a granted parent's wake queue" }]);
  }
}

function parse<T>(shape: z.Shape<T>, event: unknown, what: string): T {
  const parsed = shape.safeParse(event);
  if (parsed.success) return parsed.data;
  throw new InvalidInputError(`invalid ${what} event`, zodIssues(parsed.error));
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
