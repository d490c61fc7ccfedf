/**
 * cdk-nag's AWS Solutions checks on the construct: zero findings, in every shape the construct
 * takes (default, webhook off, data destroyed, every alarm, a brought secret). It acknowledges
 * five, each narrowly and with its reason (written in the construct, so users of it see them).
 */
import { Validations } from "aws-cdk-lib";
import * as iam from "aws-cdk-lib/aws-iam";
import * as lambda from "aws-cdk-lib/aws-lambda";
import * as secretsmanager from "aws-cdk-lib/aws-secretsmanager";
import { AwsSolutionsChecks } from "cdk-nag";
import { describe, expect, it } from "vitest";
import { synthDurable } from "./stack.ts";

function findings(t: ReturnType<typeof synthDurable>): string[] {
  const report = new AwsSolutionsChecks(t.app).validateScope(t.app);
  return report.violations.flatMap((v) => v.violatingResources.map((r) => `${v.ruleName} at ${r.constructPath}: ${v.description}`));
}

function acknowledgements(t: ReturnType<typeof synthDurable>): Array<{ path: string; id: string; reason: string }> {
  return t.app.node.findAll().flatMap((c) =>
    c.node.metadata
      .filter((m) => m.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
      .flatMap((m) => Object.entries(m.data as Record<string, string>).map(([id, reason]) => ({ path: c.node.path, id: id.replace(/^annotation::/i, ""), reason }))),
  );
}

describe("cdk-nag AwsSolutions", () => {
  it("finds nothing in the default DurableFunction", () => {
    expect(findings(synthDurable())).toEqual([]);
  });

  it("finds nothing with the webhook off or the data destroyed", async () => {
    const { RemovalPolicy } = await import("aws-cdk-lib");
    expect(findings(synthDurable({ webhook: false, removalPolicy: RemovalPolicy.DESTROY }))).toEqual([]);
  });

  it("finds nothing with every alarm, or none", () => {
    expect(findings(synthDurable({ alarms: "full" }))).toEqual([]);
    expect(findings(synthDurable({ alarms: "none" }))).toEqual([]);
  });

  it("finds nothing with a Secrets Manager secret brought", () => {
    const arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:orders-webhook-AbCdEf";
    expect(findings(synthDurable({}, { props: (scope) => ({ webhookSecret: secretsmanager.Secret.fromSecretCompleteArn(scope, "Brought", arn) }) }))).toEqual([]);
  });

  it("acknowledges exactly five findings, each with its reason", () => {
    const t = synthDurable();
    const acks = acknowledgements(t);
    const bucketId = t.id(t.durable.payloadBucket ?? { node: {} });
    expect(acks.map((a) => [a.path, a.id])).toEqual([
      ["Test/Orders/Payloads", "AwsSolutions-S1"], // private to the engine's functions, objects named in the journal
      ["Test/Orders/FunctionRole", `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:scheduler:eu-west-1:123456789012:schedule/${t.durable.scheduleGroup.scheduleGroupName}/*]`],
      ["Test/Orders/FunctionRole", `AwsSolutions-IAM5[Resource::<${bucketId}.Arn>/runs/*]`], // objects named per run and hash
      ["Test/Orders/Function", "AwsSolutions-L1"], // the default runtime, on purpose
      ["Test/Orders/Retention/Failures", "AwsSolutions-SQS3"], // it is the stream mapping's failure destination
    ]);
    for (const a of acks) expect(a.reason.length, a.id).toBeGreaterThan(40);
  });

  it("the runtime acknowledgement names the runtime the function has, and is not made for one the user chose", () => {
    const t = synthDurable();
    const runtime = Object.values(t.template.findResources("AWS::Lambda::Function")).map((f) => (f.Properties as { Runtime: string }).Runtime);
    expect(runtime).toEqual(["nodejs24.x"]);
    expect(acknowledgements(t).find((a) => a.id === "AwsSolutions-L1")?.reason).toMatch(/^nodejs24\.x on purpose: the newest Lambda Node runtime Waymark is tested on/);
    const older = synthDurable({ functionProps: { runtime: lambda.Runtime.NODEJS_22_X } });
    expect(acknowledgements(older).map((a) => a.id)).not.toContain("AwsSolutions-L1");
    expect(findings(older)).toEqual([expect.stringMatching(/^AwsSolutions-L1 at Test\/Orders\/Function\/Resource/)]);
  });

  it("the wildcard acknowledgement is narrow: a wildcard a user adds is still reported", () => {
    const t = synthDurable();
    t.durable.role.addToPrincipalPolicy(new iam.PolicyStatement({ actions: ["s3:GetObject"], resources: ["arn:aws:s3:::some-bucket/*"] }));
    expect(findings(t)).toEqual([expect.stringMatching(/^AwsSolutions-IAM5\[Resource::arn:aws:s3:::some-bucket\/\*\] at Test\/Orders\/FunctionRole\/DefaultPolicy/)]);
  });
});
