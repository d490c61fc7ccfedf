/**
 * The Lambda entry: one handler for every way Waymark's function is invoked.
 *
 *   SQS batch            → wakes (partial batch failures)
 *   Function URL (2.0)   → the webhook (start, signal, status, approval links)
 *   { waymark: "start" } → start a run by direct invocation
 *   { waymark: "watchdog" } → wake overdue runs (the construct's rate schedule)
 *   { waymark: "child-start" | "child-cancel" } → a parent in another function starts or
 *                          cancels a child here (child-entry.ts)
 *   DynamoDB stream      → retention: TTL deleted a run's meta item, delete the rest of the run
 */
import { InvalidInputError, WaymarkError } from "../core/errors.ts";
import type { HttpHandler } from "../http/types.ts";
import { loadWebhook } from "#webhook-load";
import { CHILD_CANCEL, CHILD_START, cancelChildByInvoke, childEntryEvent, startChildByInvoke, viaChildEntry } from "./child-entry.ts";
import { type LambdaContext, isDynamoStreamEvent, isFunctionUrlEvent, isSqsEvent, waymarkAction } from "./lambda-types.ts";
import { handleRetentionStream } from "./retention-stream.ts";
import { type AwsRuntime, type AwsRuntimeOptions, createAwsRuntime } from "./runtime.ts";
import { handleWakeBatch } from "./sqs-entry.ts";
import { sweepOverdueRuns } from "./watchdog.ts";
import type { WebhookCode } from "./webhook-load.ts";

/** An event this function does not handle. */
export class UnsupportedEventError extends WaymarkError {
  override readonly name = "UnsupportedEventError" as const;
  readonly retryable = false;
}

/** A Lambda handler: what `durable()` and `createLambdaHandler` return. */
export type LambdaHandler = (event: unknown, context: LambdaContext) => Promise<unknown>;

type Webhook = { http: HttpHandler; handle: WebhookCode[1]["handleFunctionUrl"] };

/**
 * The webhook's code, unless the build said this function serves none: a bundler that replaces
 * `process.env.WAYMARK_WEBHOOK` with `"off"` (esbuild's `define`, as for a `webhook: false`
 * function) drops these imports, and with them the routes and the approver's page. The same
 * variable set at run time turns the webhook off too (Function URL requests get a 503).
 */
function webhookCode(): Promise<WebhookCode> | undefined {
  return process.env.WAYMARK_WEBHOOK === "off" ? undefined : loadWebhookCode();
}

function loadWebhookCode(): Promise<WebhookCode> {
  const code = loadWebhook();
  code.catch(() => {}); // awaited (and its failure thrown) only by a function that serves the webhook
  return code;
}

function webhookOf(rt: AwsRuntime, secret: string, [{ createHttpHandler }, { handleFunctionUrl }]: WebhookCode): Webhook {
  const http = createHttpHandler({
    client: rt.client,
    secret,
    clock: rt.clock,
    ...(rt.links ? { links: rt.links } : {}),
    onFault: (err) => rt.log({ level: "error", event: "webhook-fault", runId: "", error: String(err) }),
  });
  return { http, handle: handleFunctionUrl };
}

/**
 * Creates the Lambda handler for a set of workflows. `durable()` does this for you when its
 * result is used as the handler; use this to host several workflows in one function.
 *
 * @example
 * ```ts
 * import { createLambdaHandler } from "waymark/aws";
 * export const handler = createLambdaHandler({ workflows: [orderFlow, refundFlow] });
 * ```
 */
export function createLambdaHandler(options: AwsRuntimeOptions): LambdaHandler {
  // Loading starts with the handler, as a static import would; only a function with a secret waits for it.
  const code = webhookCode();
  let ready: Promise<{ rt: AwsRuntime; webhook: Webhook | undefined }> | undefined;
  const init = async () => {
    const rt = await createAwsRuntime(options);
    return { rt, webhook: rt.secret && code ? webhookOf(rt, rt.secret, await code) : undefined };
  };
  return async (event, context) => {
    ready ??= init().catch((err: unknown) => {
      ready = undefined; // a failed cold start is retried by the next invocation
      throw err;
    });
    const { rt, webhook } = await ready;
    rt.logger?.addContext?.(context);
    // Through the child-entry alias (a parent function's only grant): child starts and cancels
    // only, judged on the whole event, and dispatched as such — never as a batch or a stream.
    if (viaChildEntry(context.invokedFunctionArn)) {
      const child = childEntryEvent(event);
      if ("refused" in child) return { ok: false, error: { name: "UnsupportedEventError", message: child.refused } };
      return child.kind === "start" ? startChildByInvoke(rt, event) : cancelChildByInvoke(rt, event);
    }
    const action = waymarkAction(event);
    if (isSqsEvent(event)) return handleWakeBatch(rt, event, context);
    if (isDynamoStreamEvent(event)) return handleRetentionStream(rt, event);
    if (isFunctionUrlEvent(event)) {
      if (!webhook) return { statusCode: 503, headers: { "content-type": "application/json" }, body: JSON.stringify({ error: { name: "WebhookDisabled", message: "this function has no webhook secret configured" } }) };
      return webhook.handle(webhook.http, event);
    }
    switch (action) {
      case "start":
        return startByInvoke(rt, event as { runId?: unknown; input?: unknown; workflow?: unknown });
      case "watchdog":
        return sweepOverdueRuns(rt);
      case CHILD_START:
        return startChildByInvoke(rt, event);
      case CHILD_CANCEL:
        return cancelChildByInvoke(rt, event);
      default:
        throw new UnsupportedEventError("expected an SQS batch, a Function URL request, the journal table's stream, { waymark: \"start\" }, { waymark: \"watchdog\" } or a child start or cancel from a parent function");
    }
  };
}

/** Starts a run from a direct invocation; a client mistake is an answer, not a function error. */
async function startByInvoke(rt: AwsRuntime, event: { runId?: unknown; input?: unknown; workflow?: unknown }): Promise<unknown> {
  try {
    const names = [...rt.workflows.keys()];
    const workflow = typeof event.workflow === "string" ? event.workflow : names.length === 1 ? names[0] : undefined;
    // A workflow this function does not host is the caller's mistake here, not a retryable fault.
    if (workflow === undefined || !rt.workflows.has(workflow)) {
      throw new InvalidInputError(workflow === undefined ? "which workflow?" : `this function does not host workflow "${workflow}"`, [{ path: "workflow", message: `one of ${names.join(", ")}` }]);
    }
    if (typeof event.runId !== "string") throw new InvalidInputError("invalid start event", [{ path: "runId", message: "a string is required" }]);
    const started = await rt.client.start(workflow, { runId: event.runId, input: event.input });
    return { ok: true, runId: started.runId, created: started.created, status: started.run.status };
  } catch (err) {
    if (err instanceof WaymarkError && !err.retryable) {
      return { ok: false, error: { name: err.name, message: err.message, ...(err instanceof InvalidInputError ? { issues: err.issues } : {}) } };
    }
    throw err;
  }
}
