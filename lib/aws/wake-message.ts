/**
 * The wake message: what an SQS message body (sent directly, or by a Scheduler schedule) holds.
 * Pointers only — the run id, why, which wake, and when — never run state: the journal is the
 * truth, and the woken invocation reads it.
 *
 *   { "v": 1, "runId": "order-8472", "reason": "sleep", "key": "sleep:cool-off", "at": 1767225600000 }
 *
 * With tracing on, `tp` carries the W3C `traceparent` of the invocation that scheduled it.
 */
import * as z from "../core/shape.ts";
import type { Wake, WakeReason } from "../ports.ts";
import { MalformedWakeError } from "./errors.ts";

/** The version of the wake message format, in every wake's body. */
export const WAKE_MESSAGE_VERSION = 1;

/** Every wake reason; the check below fails to compile if `WakeReason` gains one not listed. */
const REASONS = ["start", "sleep", "timeout", "retry", "signal", "continue", "watchdog", "cancel"] as const satisfies readonly WakeReason[];
const everyReasonListed: [Exclude<WakeReason, (typeof REASONS)[number]>] extends [never] ? true : never = true;
void everyReasonListed;

const WakeMessage = z.object({
  v: z.literal(WAKE_MESSAGE_VERSION),
  runId: z.string().min(1),
  reason: z.enum(REASONS),
  key: z.string().min(1),
  at: z.number().int().nonnegative(),
  tp: z.string().max(64).optional(),
});

/**
 * The message body for a wake.
 *
 * @example
 * ```ts
 * await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: formatWakeMessage(wake) }));
 * ```
 */
export function formatWakeMessage(wake: Wake): string {
  return JSON.stringify({ v: WAKE_MESSAGE_VERSION, runId: wake.runId, reason: wake.reason, key: wake.key, at: wake.at, ...(wake.traceparent ? { tp: wake.traceparent } : {}) });
}

/**
 * Reads a wake from an SQS message body. Throws {@link MalformedWakeError} (not retryable: the
 * message will never parse) on anything else, saying what is wrong.
 *
 * @example
 * ```ts
 * for (const record of event.Records) {
 *   const wake = parseWakeMessage(record.body);
 *   await engine.invoke(wake.runId);
 * }
 * ```
 */
export function parseWakeMessage(body: string): Wake {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    throw new MalformedWakeError(`body is not JSON: ${JSON.stringify(body.slice(0, 80))}`);
  }
  const version = typeof json === "object" && json !== null ? (json as { v?: unknown }).v : undefined;
  if (version !== WAKE_MESSAGE_VERSION) {
    throw new MalformedWakeError(`message version ${JSON.stringify(version)}, this code reads version ${WAKE_MESSAGE_VERSION}`);
  }
  const parsed = WakeMessage.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new MalformedWakeError(`${issue?.path.join(".") || "(root)"}: ${issue?.message ?? "invalid"}`);
  }
  const { runId, reason, key, at, tp } = parsed.data;
  return { runId, reason, key, at, ...(tp === undefined ? {} : { traceparent: tp }) };
}

/** SQS's longest per-message delay, in seconds. */
export const SQS_MAX_DELAY_SECONDS = 900;

/**
 * How long to hold a wake that arrived before its time, in whole SQS delay seconds (at most
 * 900; a longer remainder is topped up again on the next arrival); 0 when it is due. Scheduler
 * fires within the minute of its `at()` time, so the Lambda entry re-sends an early wake with
 * this delay instead of invoking the run, which would only find the journal not yet due.
 *
 * @example
 * ```ts
 * const hold = topUpDelaySeconds(wake, Date.now());
 * if (hold > 0) await sqsWakes.send(wake, hold);
 * else await engine.invoke(wake.runId);
 * ```
 */
export function topUpDelaySeconds(wake: Wake, now: number): number {
  const early = wake.at - now;
  return early > 0 ? Math.min(SQS_MAX_DELAY_SECONDS, Math.ceil(early / 1000)) : 0;
}
