/**
 * Children in another function: `child.grantInvoke(parent)` gives the parent the right to invoke
 * the child's function and nothing of its table, queue or schedules; gives the child the right to
 * send to the parent's wake queue and nothing else of the parent; and names the child's function
 * in the parent's environment. Real `cdk synth` (bundling skipped).
 */
import { App, type CfnElement, Stack } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import { describe, expect, it } from "vitest";
import { AwsSolutionsChecks } from "cdk-nag";
import { DurableFunction } from "waymark/cdk";
import { ACCOUNT, ENTRY, REGION } from "./stack.ts";

function synthFamily(children = 1, alsoBeforeSynth?: (parent: DurableFunction, kids: DurableFunction[]) => void) {
  const app = new App({ context: { "aws:cdk:bundling-stacks": [] } });
  const stack = new Stack(app, "Family", { env: { account: ACCOUNT, region: REGION } });
  const parent = new DurableFunction(stack, "Orders", { entry: ENTRY, handler: "orderFlow" });
  const kids = Array.from({ length: children }, (_, i) => new DurableFunction(stack, `Payments${i}`, { entry: ENTRY, handler: "orderFlow" }));
  for (const kid of kids) kid.grantInvoke(parent);
  alsoBeforeSynth?.(parent, kids);
  const template = Template.fromStack(stack);
  const resources = template.toJSON().Resources as Record<string, { Type: string; Properties: Record<string, unknown> }>;
  const ref = (token: string) => stack.resolve(token);
  const id = (c: { node: { defaultChild?: unknown } }) => stack.resolve((c.node.defaultChild as CfnElement).logicalId) as string;
  const statements = (fn: DurableFunction) =>
    Object.values(resources)
      .filter((r) => r.Type === "AWS::IAM::Policy" && JSON.stringify(r.Properties.Roles) === JSON.stringify([{ Ref: id(fn.role) }]))
      .flatMap((r) => (r.Properties.PolicyDocument as { Statement: Array<{ Sid?: string; Action: unknown; Resource: unknown }> }).Statement);
  const env = (fn: DurableFunction) => (resources[id(fn.function)]?.Properties.Environment as { Variables: Record<string, unknown> }).Variables;
  return { stack, parent, kids, statements, env, ref, resources };
}

/** How the template refers to a child's child-entry alias ARN. */
function entryOf(kid: DurableFunction, ref: (token: string) => unknown): unknown {
  const alias = kid.childEntry;
  if (!alias) throw new Error("no child-entry alias: grantInvoke makes it");
  return ref(alias.functionArn);
}

describe("child.grantInvoke(parent)", () => {
  it("lets the parent invoke the child's function, and nothing else of the child", () => {
    const { parent, kids, statements, ref, resources } = synthFamily();
    const kid = kids[0] as DurableFunction;
    const invoke = statements(parent).filter((s) => JSON.stringify(s.Action).includes("lambda:"));
    // The child-entry alias only, never the function itself: through it the handler takes child starts and cancels only.
    expect(invoke).toEqual([{ Sid: "InvokeChildren", Effect: "Allow", Action: "lambda:InvokeFunction", Resource: entryOf(kid, ref) }]);
    expect(JSON.stringify(statements(parent))).not.toContain(JSON.stringify(ref(kid.function.functionArn)));
    const aliases = Object.values(resources).filter((r) => r.Type === "AWS::Lambda::Alias");
    expect(aliases.map((a) => a.Properties.Name)).toEqual(["waymark-children"]);
    // Nothing of the child's journal, queue or schedules reaches the parent's role.
    const parentText = JSON.stringify(statements(parent));
    for (const token of [kid.table.tableArn, kid.queue.queueArn, kid.scheduleGroup.scheduleGroupName]) expect(parentText).not.toContain(JSON.stringify(ref(token)));
  });

  it("lets the child send to the parent's wake queue, and nothing else of the parent", () => {
    const { parent, kids, statements, ref } = synthFamily();
    const kid = kids[0] as DurableFunction;
    expect(statements(kid).filter((s) => s.Sid === "SendChildEnds")).toEqual([{ Sid: "SendChildEnds", Effect: "Allow", Action: "sqs:SendMessage", Resource: ref(parent.queue.queueArn) }]);
    const kidText = JSON.stringify(statements(kid));
    for (const token of [parent.table.tableArn, parent.function.functionArn, parent.scheduleGroup.scheduleGroupName]) expect(kidText).not.toContain(JSON.stringify(ref(token)));
    expect(kidText).not.toContain("lambda:InvokeFunction");
  });

  it("lists every child function in the parent's WAYMARK_CHILD_FUNCTIONS, in grant order; the children get no such list", () => {
    const { parent, kids, statements, env, ref } = synthFamily(2);
    const [a, b] = kids as [DurableFunction, DurableFunction];
    expect(env(parent).WAYMARK_CHILD_FUNCTIONS).toEqual({ "Fn::Join": ["", [entryOf(a, ref), ",", entryOf(b, ref)]] });
    expect(env(a).WAYMARK_CHILD_FUNCTIONS).toBeUndefined();
    // Each child accepts only its granted parents' queues as the place to send its end.
    for (const kid of [a, b]) expect(env(kid).WAYMARK_PARENT_QUEUES).toEqual(ref(parent.queue.queueUrl));
    expect(env(parent).WAYMARK_PARENT_QUEUES).toBeUndefined();
    expect(statements(parent).filter((s) => s.Sid === "InvokeChildren")).toEqual([
      { Sid: "InvokeChildren", Effect: "Allow", Action: "lambda:InvokeFunction", Resource: [entryOf(a, ref), entryOf(b, ref)] },
    ]);
  });

  it("a second grant of the same pair changes nothing", () => {
    const twice = synthFamily(1, (parent, [kid]) => kid?.grantInvoke(parent));
    const kid = twice.kids[0] as DurableFunction;
    expect(twice.statements(twice.parent).filter((s) => s.Sid === "InvokeChildren")).toEqual([{ Sid: "InvokeChildren", Effect: "Allow", Action: "lambda:InvokeFunction", Resource: entryOf(kid, twice.ref) }]);
    expect(twice.statements(kid).filter((s) => s.Sid === "SendChildEnds")).toEqual([{ Sid: "SendChildEnds", Effect: "Allow", Action: "sqs:SendMessage", Resource: twice.ref(twice.parent.queue.queueArn) }]);
    expect(twice.env(twice.parent).WAYMARK_CHILD_FUNCTIONS).toEqual(entryOf(kid, twice.ref));
  });

  it("refuses a function as its own child, and functions in two stacks, with the reason", () => {
    const { parent, stack } = synthFamily();
    expect(() => parent.grantInvoke(parent)).toThrow(/hosts its own children/);
    const other = new Stack(stack.node.root as App, "Other", { env: { account: ACCOUNT, region: REGION } });
    const far = new DurableFunction(other, "Far", { entry: ENTRY, handler: "orderFlow" });
    expect(() => far.grantInvoke(parent)).toThrow(/one stack/);
  });

  it("cdk-nag AwsSolutions finds nothing in a parent and two children", () => {
    const { stack } = synthFamily(2);
    const app = stack.node.root as App;
    const report = new AwsSolutionsChecks(app).validateScope(app);
    expect(report.violations.flatMap((v) => v.violatingResources.map((r) => `${v.ruleName} at ${r.constructPath}`))).toEqual([]);
  });
});
