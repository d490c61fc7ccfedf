/**
 * The SQS transport: each record of a batch is one wake. Answers with partial batch failures,
 * so one failing run does not redeliver the others.
 */
import type { AwsRuntime } from "./runtime.ts";
import type { LambdaContext, SqsBatchResponse, SqsEvent } from "./lambda-types.ts";
import { parseWakeMessage, topUpDelaySeconds } from "./wake-message.ts";
import { isChildEndMessage, parseChildEndMessage } from "./child-message.ts";
import { DEFAULT_DEADLINE_MARGIN_MS } from "./config.ts";
import { HandledMessages } from "./handled-messages.ts";

/**
 * Handles a batch of wakes. A wake that arrives early (Scheduler fires within its minute) is
 * sent back with the remaining delay; duplicates of a run within the batch are acknowledged
 * (one invocation does the work); a run whose lease another invocation holds is acknowledged
 * too (the owner finishes it, and the watchdog covers an owner that dies), and so is a wake
 * that finds its run suspended and not due by the wake's time (`not-due`: a duplicate of a wake
 * already handled, or a stale one; the run's own wake is still to come). Each costs one request.
 * A redelivery of a message this container handled already costs none (handled-messages.ts).
 */
export async function handleWakeBatch(rt: AwsRuntime, event: SqsEvent, context: LambdaContext): Promise<SqsBatchResponse> {
  const failures: Array<{ itemIdentifier: string }> = [];
  const seen = new Set<string>();
  const done = handledBy.get(rt) ?? new HandledMessages();
  handledBy.set(rt, done);
  const start = context.getRemainingTimeInMillis();
  // Keep a margin for the checkpoint itself, but never so much that nothing can run.
  const margin = Math.min(rt.config.checkpointMarginMs, start / 4);
  // A body still running this close to the function's end is given up (the run is woken again
  // when its lease lapses), so the batch answers before Lambda stops it and is not redelivered.
  const deadline = rt.clock.now() + start - Math.min(rt.config.deadlineMarginMs ?? DEFAULT_DEADLINE_MARGIN_MS, start / 10);
  await Promise.all(
    event.Records.map(async (record) => {
      const began = rt.clock.now();
      let runId: string | undefined;
      if (done.has(record.messageId)) {
        rt.log({ level: "info", event: "wake", runId: runIdOf(record.body), outcome: "redelivered", receiveCount: Number(record.attributes?.ApproximateReceiveCount ?? 1) });
        return;
      }
      let failed = false;
      try {
        if (isChildEndMessage(record.body)) {
          // A child in another function ended: record it for its parent here, and wake the parent.
          const end = parseChildEndMessage(record.body);
          runId = end.parent.runId;
          if (!(await rt.store.getRun(runId))) {
            // No such parent here (expired, or a message meant for another deployment): nothing to wake.
            rt.log({ level: "warn", event: "child-end", runId, childRunId: end.childRunId, outcome: "no-such-parent" });
            return;
          }
          await rt.engine.protocol.deliverChildEnd(end);
          rt.log({ level: "info", event: "child-end", runId, childRunId: end.childRunId, status: end.outcome.status });
          return;
        }
        const wake = parseWakeMessage(record.body);
        runId = wake.runId;
        const early = topUpDelaySeconds(wake, rt.clock.now());
        if (early > 0) {
          await rt.sqs.send(wake, early);
          rt.log({ level: "info", event: "wake", runId, reason: wake.reason, outcome: "early", delaySeconds: early });
          return;
        }
        if (seen.has(wake.runId)) {
          rt.log({ level: "info", event: "wake", runId, reason: wake.reason, outcome: "duplicate-in-batch" });
          return;
        }
        seen.add(wake.runId);
        let started = 0;
        const result = await rt.engine.invoke(wake.runId, {
          // The first new step always runs, so a short timeout still makes progress.
          shouldYield: () => started++ > 0 && context.getRemainingTimeInMillis() < margin,
          deadline,
          // A suspended run not due by the wake's time is not invoked (a duplicate or a stale wake).
          wakeAt: wake.at,
          ...(wake.traceparent ? { traceparent: wake.traceparent } : {}),
        });
        rt.log({
          level: result.status === "failed" || result.status === "abandoned" || result.status === "unhosted" ? "warn" : "info",
          event: "wake",
          runId,
          reason: wake.reason,
          outcome: result.status,
          receiveCount: Number(record.attributes?.ApproximateReceiveCount ?? 1),
          durationMs: rt.clock.now() - began,
        });
      } catch (err) {
        failed = true;
        failures.push({ itemIdentifier: record.messageId });
        rt.log({
          level: "error",
          event: "wake",
          runId: runId ?? "(unparsed)",
          outcome: "error",
          error: err instanceof Error ? { name: err.name, message: err.message } : String(err),
          receiveCount: Number(record.attributes?.ApproximateReceiveCount ?? 1),
          durationMs: rt.clock.now() - began,
        });
      } finally {
        // Handled to its end (every return above acknowledges it): a copy of it is answered at once.
        if (!failed) done.add(record.messageId);
      }
    }),
  );
  return { batchItemFailures: failures };
}

/** The run a message is for (a child's end: its parent), for the log. */
function runIdOf(body: string): string {
  try {
    return isChildEndMessage(body) ? parseChildEndMessage(body).parent.runId : parseWakeMessage(body).runId;
  } catch {
    return "(unparsed)";
  }
}

/** Each runtime's (each container's) handled messages. */
const handledBy = new WeakMap<AwsRuntime, HandledMessages>();
