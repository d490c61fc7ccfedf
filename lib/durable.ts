/**
 * `durable()`: a workflow definition that is also its own Lambda handler. The AWS runtime is
 * loaded on the first invocation (a dynamic import), so importing a workflow module constructs
 * nothing AWS, and the local and test runtimes take the same object.
 */
import type { StandardSchemaV1 } from "./core/standard-schema.ts";
import { type DurableOptions, type SignalMap, type Workflow, type WorkflowFn, defineWorkflow } from "./core/definition.ts";

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
  options: DurableOptions<IS, S>,
  fn: WorkflowFn<StandardSchemaV1.InferOutput<IS>, O, S>,
): DurableWorkflow<StandardSchemaV1.InferOutput<IS>, O, S> {
  const workflow = defineWorkflow(options, fn);
  let handler: Promise<(event: unknown, context: DurableLambdaContext) => Promise<unknown>> | undefined;
  const lambda = async (event: unknown, context: DurableLambdaContext): Promise<unknown> => {
    handler ??= import("./aws/lambda.ts").then((m) => m.createLambdaHandler({ workflows: [workflow] }));
    return (await handler)(event, context);
  };
  // A function's own `name` and `length` are read-only: define the workflow's fields over them.
  for (const [key, value] of Object.entries(workflow)) Object.defineProperty(lambda, key, { value, enumerable: true });
  return Object.freeze(lambda) as unknown as DurableWorkflow<StandardSchemaV1.InferOutput<IS>, O, S>;
}
