/**
 * The child-end message: how a child run in another deployment hands its end to its parent. The
 * child's function sends it to the parent's own wake queue (the `replyTo` its parent record
 * names); the parent's function records it as the `__child` signal of the parent's wait and
 * wakes the parent (lib/aws/sqs-entry.ts).
 *
 *   { "v": 1, "kind": "child-end", "runId": "order-1", "waitId": "pay", "childRunId": "order-1:pay",
 *     "outcome": { "status": "completed", "result": { "receipt": "r-9" } } }
 *
 * Unlike a wake, it carries state (the child's outcome), because the parent's deployment cannot
 * read the child's journal. An outcome too large for one SQS message is sent as a failure
 * (`ValueTooLargeError`), so the parent is never left waiting.
 */
import { CHILD_END_MAX_BYTES, type ChildEnd, type ChildOutcome } from "../core/children.ts";
import { ValueTooLargeError } from "../core/errors.ts";
import { serializeError } from "../core/error-codec.ts";
import * as z from "../core/shape.ts";
import { MalformedWakeError } from "./errors.ts";

export const CHILD_END_KIND = "child-end";

export { CHILD_END_MAX_BYTES };

const Outcome = z.object({
  status: z.enum(["completed", "failed", "cancelled"] as const),
  result: z.unknown().optional(),
  error: z.object({ name: z.string(), message: z.string(), fields: z.record(z.string(), z.unknown()).optional(), stack: z.string().optional() }).optional(),
});

const ChildEndMessage = z.object({
  v: z.literal(1),
  kind: z.literal(CHILD_END_KIND),
  runId: z.string().min(1),
  waitId: z.string().min(1),
  incarnation: z.number().int().positive().optional(),
  childRunId: z.string().min(1),
  outcome: Outcome,
});

/**
 * The message body for a child's end, within {@link CHILD_END_MAX_BYTES}.
 *
 * @example
 * ```ts
 * await sqs.send(new SendMessageCommand({ QueueUrl: parent.replyTo, MessageBody: formatChildEndMessage(end) }));
 * ```
 */
export function formatChildEndMessage(end: ChildEnd): string {
  const { runId, waitId, incarnation } = end.parent;
  const body = (outcome: ChildOutcome) => sqsSafe(JSON.stringify({ v: 1, kind: CHILD_END_KIND, runId, waitId, ...(incarnation === undefined ? {} : { incarnation }), childRunId: end.childRunId, outcome }));
  const full = body(end.outcome);
  const bytes = Buffer.byteLength(full);
  if (bytes <= CHILD_END_MAX_BYTES) return full;
  const error = serializeError(new ValueTooLargeError(`result of child run ${end.childRunId}`, bytes, CHILD_END_MAX_BYTES));
  delete error.stack;
  return body({ status: "failed", error });
}

/** SQS refuses U+FFFE and U+FFFF in a body, which JSON.stringify leaves as they are: escape them (JSON reads them back). */
function sqsSafe(json: string): string {
  return json.replace(/[\uFFFE\uFFFF]/g, (c) => `\\u${c.charCodeAt(0).toString(16)}`);
}

/**
 * True when an SQS body is a child-end message (anything else is read as a wake). Every wake
 * passes here, so a body without the marker is answered without parsing it (a wake's fields
 * cannot contain it: run ids have no quotes).
 */
export function isChildEndMessage(body: string): boolean {
  if (!body.includes(`"${CHILD_END_KIND}"`)) return false;
  try {
    return (JSON.parse(body) as { kind?: unknown } | null)?.kind === CHILD_END_KIND;
  } catch {
    return false;
  }
}

/**
 * Reads a child-end message. Throws {@link MalformedWakeError} (not retryable) when the body is
 * not one, saying what is wrong.
 *
 * @example
 * ```ts
 * if (isChildEndMessage(record.body)) await rt.engine.protocol.deliverChildEnd(parseChildEndMessage(record.body));
 * ```
 */
export function parseChildEndMessage(body: string): ChildEnd {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    throw new MalformedWakeError(`child-end body is not JSON: ${JSON.stringify(body.slice(0, 80))}`);
  }
  const parsed = ChildEndMessage.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new MalformedWakeError(`child-end ${issue?.path.join(".") || "(root)"}: ${issue?.message ?? "invalid"}`);
  }
  const m = parsed.data;
  const outcome: ChildOutcome = { status: m.outcome.status, ...(Object.hasOwn(m.outcome, "result") ? { result: m.outcome.result } : {}), ...(m.outcome.error ? { error: m.outcome.error } : {}) };
  return { parent: { runId: m.runId, waitId: m.waitId, ...(m.incarnation === undefined ? {} : { incarnation: m.incarnation }) }, childRunId: m.childRunId, outcome };
}
