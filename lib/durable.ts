/**
 * `durable()`: a workflow definition that is also its own Lambda handler. The AWS runtime is
 * loaded on the first invocation (a dynamic import), so importing a workflow module constructs
 * nothing AWS, and the local and test runtimes take the same object.
 */
import type { StandardSchemaV1 } from "./core/standard-schema.ts";
import { type DurableOptions, type SignalMap, type Workflow, type WorkflowFn, defineWorkflow } from "./core/definition.ts";
import type { Logger } from "./observe/logger.ts";
import type { EmfOptions } from "./observe/metrics.ts";
import { loadLambda } from "#lambda-load";

/** `durable()`'s options: the workflow's, and how its Lambda handler logs, meters and traces. */
export interface DurableHandlerOptions<IS extends StandardSchemaV1, S extends SignalMap> extends DurableOptions<IS, S> {
  /**
   * Where the handler's lines go: a Powertools `Logger` (given each invocation's Lambda
   * context), or any object with `info`/`warn`/`error`. Default: Powertools-shaped JSON lines.
   */
  logger?: Logger;
  /** Embedded Metric Format lines per invocation. Default: on (namespace `Waymark`). */
  metrics?: boolean | EmfOptions;
  /** OpenTelemetry spans when `@opentelemetry/api` is installed. Default: true. */
  tracing?: boolean;
}

/** The Lambda context fields Waymark reads. */
export interface DurableLambdaContext {
  getRemainingTimeInMillis(): number;
}

/** A workflow that is also a Lambda handler (SQS wakes, Function URL webhook, direct start). */
export type DurableWorkflow<I, O, S extends SignalMap> = Workflow<I, O, S> & ((event: unknown, context: DurableLambdaContext) => Promise<unknown>);

/**
 * Defines a durable workflow. Export it as your Lambda's handler; pass the same object to
 * `createLocalRuntime` and `createTestRuntime`.
 *
 * @example
 * ```ts
 * import { z } from "zod";
 * import { durable } from "waymark";
 *
 * export const handler = durable(
 *   { name: "charge-flow", input: z.object({ orderId: z.string(), amount: z.number() }) },
 *   async (order, step) => {
 *     const charge = await step.run("charge_card", ({ idempotencyKey }) =>
 *       payments.charge(order.orderId, order.amount, { idempotencyKey }));
 *     await step.run("send_receipt", () => mailer.receipt(order.orderId, charge.id));
 *     return charge.id;
 *   },
 * );
 * ```
 */
export function durable<IS extends StandardSchemaV1, O, S extends SignalMap = Record<never, StandardSchemaV1>>(
  options: DurableHandlerOptions<IS, S>,
  fn: WorkflowFn<StandardSchemaV1.InferOutput<IS>, O, S>,
): DurableWorkflow<StandardSchemaV1.InferOutput<IS>, O, S> {
  const { logger, metrics, tracing, ...definition } = options;
  const workflow = defineWorkflow(definition, fn);
  const observe = { ...(logger ? { logger } : {}), ...(metrics === undefined ? {} : { metrics }), ...(tracing === undefined ? {} : { tracing }) };
  let handler: Promise<(event: unknown, context: DurableLambdaContext) => Promise<unknown>> | undefined;
  const lambda = async (event: unknown, context: DurableLambdaContext): Promise<unknown> => {
    handler ??= loadLambda().then((m) => m.createLambdaHandler({ workflows: [workflow], ...observe }));
    return (await handler)(event, context);
  };
  // A function's own `name` and `length` are read-only: define the workflow's fields over them.
  for (const [key, value] of Object.entries(workflow)) Object.defineProperty(lambda, key, { value, enumerable: true });
  return Object.freeze(lambda) as unknown as DurableWorkflow<StandardSchemaV1.InferOutput<IS>, O, S>;
}
