/**
 * The stack the CDK tests assert on: the example's order workflow in a `DurableFunction`, in a
 * stack with a fixed account and region. Bundling (esbuild, a few seconds) is skipped unless a
 * test asks for it: only `bundle.test.ts` needs the real asset.
 */
import { fileURLToPath } from "node:url";
import { App, type CfnElement, Stack } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import { DurableFunction, type DurableFunctionProps } from "waymark/cdk";

export const ENTRY = fileURLToPath(new URL("../../functions/order-flow.ts", import.meta.url));
export const ACCOUNT = "123456789012";
export const REGION = "eu-west-1";

export interface TestStack {
  app: App;
  stack: Stack;
  durable: DurableFunction;
  template: Template;
  /** The logical id of a construct's CloudFormation resource. */
  id: (construct: { node: { defaultChild?: unknown } } | CfnElement) => string;
  /** How CloudFormation refers to a token (`{ "Fn::GetAtt": [...] }`, `{ Ref }`, …). */
  ref: (token: string) => unknown;
}

export interface SynthOptions {
  bundle?: boolean;
  outdir?: string;
  /** Props made in the stack (an imported secret needs a scope). */
  props?: (stack: Stack) => Partial<DurableFunctionProps>;
  /** Runs on the construct tree before the template is made. */
  beforeSynth?: (stack: Stack, durable: DurableFunction) => void;
}

/**
 * Synthesizes a stack with one `DurableFunction` (the order workflow, `handler: "orderFlow"`).
 *
 * @example
 * ```ts
 * const { template, ref, durable } = synthDurable({ webhook: false });
 * ```
 */
export function synthDurable(props: Partial<DurableFunctionProps> = {}, options: SynthOptions = {}): TestStack {
  const app = new App({
    ...(options.outdir ? { outdir: options.outdir } : {}),
    // An empty list: no stack is bundled (the asset is a placeholder).
    context: options.bundle ? {} : { "aws:cdk:bundling-stacks": [] },
  });
  const stack = new Stack(app, "Test", { env: { account: ACCOUNT, region: REGION } });
  const durable = new DurableFunction(stack, "Orders", { entry: ENTRY, handler: "orderFlow", ...props, ...options.props?.(stack) });
  options.beforeSynth?.(stack, durable);
  const template = Template.fromStack(stack);
  const id = (construct: { node: { defaultChild?: unknown } } | CfnElement): string => {
    const element = ("logicalId" in construct ? construct : construct.node.defaultChild) as CfnElement;
    return stack.resolve(element.logicalId) as string;
  };
  return { app, stack, durable, template, id, ref: (token) => stack.resolve(token) };
}
