/**
 * Least privilege, exactly: every statement of every role the construct creates, with its
 * actions and resources. And a cross-check against the code: the AWS requests `lib/aws` sends
 * are the actions the function is allowed, no more and no fewer.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Stack } from "aws-cdk-lib";
import { Match } from "aws-cdk-lib/assertions";
import * as iam from "aws-cdk-lib/aws-iam";
import * as secretsmanager from "aws-cdk-lib/aws-secretsmanager";
import * as ssm from "aws-cdk-lib/aws-ssm";
import { describe, expect, it } from "vitest";
import { JOURNAL_TABLE } from "waymark/aws";
import { schedulesInGroup } from "waymark/cdk";
import { ACCOUNT, synthDurable } from "./stack.ts";

const { template, durable, ref, id, stack } = synthDurable();
const resources = template.toJSON().Resources as Record<string, { Type: string; Properties: Record<string, unknown> }>;

/** The statements of the default policy attached to a role. */
function statementsOf(role: Parameters<typeof id>[0]): unknown[] {
  const roleId = id(role);
  const policies = Object.values(resources).filter((r) => r.Type === "AWS::IAM::Policy" && JSON.stringify(r.Properties.Roles) === JSON.stringify([{ Ref: roleId }]));
  expect(policies).toHaveLength(1);
  return (policies[0]?.Properties.PolicyDocument as { Statement: unknown[] }).Statement;
}

const trustOf = (role: Parameters<typeof id>[0]) => (resources[id(role)]?.Properties.AssumeRolePolicyDocument as { Statement: unknown[] }).Statement;
const allow = (s: Record<string, unknown>) => ({ Effect: "Allow", ...s });

describe("the function's role", () => {
  const statements = statementsOf(durable.role);

  it("is assumed by Lambda and has no managed policies (no AWSLambdaBasicExecutionRole)", () => {
    expect(trustOf(durable.role)).toEqual([allow({ Action: "sts:AssumeRole", Principal: { Service: "lambda.amazonaws.com" } })]);
    expect(resources[id(durable.role)]?.Properties.ManagedPolicyArns).toBeUndefined();
  });

  it("may do exactly this, each on its own resource", () => {
    expect(statements).toEqual([
      allow({ Action: ["logs:CreateLogStream", "logs:PutLogEvents"], Resource: ref(durable.logGroup.logGroupArn) }),
      allow({ Sid: "Journal", Action: ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:Query"], Resource: ref(durable.table.tableArn) }),
      allow({ Sid: "JournalIndexes", Action: "dynamodb:Query", Resource: JOURNAL_TABLE.indexes.map((i) => ref(`${durable.table.tableArn}/index/${i.indexName}`)) }),
      allow({ Sid: "SendWakes", Action: "sqs:SendMessage", Resource: ref(durable.queue.queueArn) }),
      allow({
        Sid: "WakeSchedules",
        Action: ["scheduler:CreateSchedule", "scheduler:GetSchedule", "scheduler:UpdateSchedule", "scheduler:DeleteSchedule"],
        Resource: ref(schedulesInGroup(stack, durable.scheduleGroup)),
      }),
      allow({ Sid: "PassSchedulerRole", Action: "iam:PassRole", Resource: ref(durable.schedulerRole.roleArn), Condition: { StringEquals: { "iam:PassedToService": "scheduler.amazonaws.com" } } }),
      allow({ Sid: "Payloads", Action: ["s3:PutObject", "s3:GetObject"], Resource: { "Fn::Join": ["", [ref(durable.payloadBucket?.bucketArn ?? ""), "/runs/*"]] } }),
      // The webhook secret's parameter, that one only: read it, and create it on the first read.
      allow({ Sid: "WebhookSecret", Action: ["ssm:GetParameter", "ssm:PutParameter"], Resource: ref(durable.webhookSecret?.parameterArn ?? "") }),
      // Added by the SQS event source: what Lambda's poller does with the role.
      allow({
        Action: ["sqs:ReceiveMessage", "sqs:ChangeMessageVisibility", "sqs:GetQueueUrl", "sqs:DeleteMessage", "sqs:GetQueueAttributes"],
        Resource: ref(durable.queue.queueArn),
      }),
      // Retention: Lambda's poller reads the journal's stream (that stream only) …
      allow({
        Sid: "ReadJournalStream",
        Action: ["dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator", "dynamodb:ListStreams"],
        Resource: ref(durable.table.tableStreamArn ?? ""),
      }),
      // … and sends the position of a batch it gave up on to the failure queue (added by SqsDlq).
      allow({ Action: ["sqs:SendMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl"], Resource: ref(durable.retention.failureQueue.queueArn) }),
    ]);
  });

  it("the schedule permissions cover this function's wake group only", () => {
    expect(ref(schedulesInGroup(stack, durable.scheduleGroup))).toEqual({
      "Fn::Join": ["", ["arn:", { Ref: "AWS::Partition" }, `:scheduler:${Stack.of(durable).region}:${ACCOUNT}:schedule/${durable.scheduleGroup.scheduleGroupName}/*`]],
    });
  });

  it("allows the AWS requests lib/aws sends, and no others", async () => {
    const sent = await requestsSentByLibAws();
    const granted = (statements as Array<{ Sid?: string; Action: string | string[] }>)
      // Statements for Lambda's pollers and for passing a role are not requests lib/aws sends.
      .filter((s) => s.Sid !== undefined && s.Sid !== "PassSchedulerRole" && s.Sid !== "ReadJournalStream")
      .flatMap((s) => (Array.isArray(s.Action) ? s.Action : [s.Action]));
    // Starting a child in another function is granted only by child.grantInvoke(parent)
    // (test/cdk/children.test.ts); sending its end to the parent's queue is sqs:SendMessage.
    // Reading a Secrets Manager secret is granted only when one is brought (below).
    // step.transact's TransactWriteItems is no IAM action: its items are authorised one by one,
    // on the journal by the journal grant, on the user's tables by fn.grantTransact (transact.test.ts).
    expect(new Set([...granted, "lambda:InvokeFunction", "secretsmanager:GetSecretValue", "dynamodb:TransactWriteItems"])).toEqual(sent);
  });
});

describe("a webhook secret brought by the user", () => {
  const policyText = (t: ReturnType<typeof synthDurable>) => JSON.stringify(t.template.findResources("AWS::IAM::Policy"));
  const statement = (t: ReturnType<typeof synthDurable>, sid: string) =>
    Object.values(t.template.findResources("AWS::IAM::Policy"))
      .flatMap((p) => (p.Properties as { PolicyDocument: { Statement: Array<{ Sid?: string }> } }).PolicyDocument.Statement)
      .filter((s) => s.Sid === sid);

  it("a Secrets Manager secret: GetSecretValue on it, the ARN in the environment, nothing of SSM", () => {
    const arn = `arn:aws:secretsmanager:eu-west-1:${ACCOUNT}:secret:orders-webhook-AbCdEf`;
    const t = synthDurable({}, { props: (scope) => ({ webhookSecret: secretsmanager.Secret.fromSecretCompleteArn(scope, "Brought", arn) }) });
    expect(statement(t, "ReadWebhookSecret")).toEqual([allow({ Sid: "ReadWebhookSecret", Action: "secretsmanager:GetSecretValue", Resource: arn })]);
    expect(policyText(t)).not.toContain("ssm:");
    t.template.hasResourceProperties("AWS::Lambda::Function", { Environment: { Variables: Match.objectLike({ WAYMARK_WEBHOOK_SECRET_ARN: arn }) } });
    t.template.resourceCountIs("AWS::SecretsManager::Secret", 0);
  });

  it("an existing SecureString parameter: GetParameter on it and nothing more (no put: the runtime never creates it)", () => {
    const t = synthDurable({}, { props: (scope) => ({ webhookSecret: ssm.StringParameter.fromSecureStringParameterAttributes(scope, "Brought", { parameterName: "/shared/orders-webhook" }) }) });
    expect(statement(t, "WebhookSecret")).toEqual([
      allow({ Sid: "WebhookSecret", Action: "ssm:GetParameter", Resource: { "Fn::Join": ["", ["arn:", { Ref: "AWS::Partition" }, `:ssm:eu-west-1:${ACCOUNT}:parameter/shared/orders-webhook`]] } }),
    ]);
    const vars = (Object.values(t.template.findResources("AWS::Lambda::Function"))[0]?.Properties as { Environment: { Variables: Record<string, unknown> } }).Environment.Variables;
    expect(vars.WAYMARK_WEBHOOK_SECRET_PARAMETER).toBe("/shared/orders-webhook");
    expect(vars.WAYMARK_WEBHOOK_SECRET_CREATE).toBeUndefined();
  });

  it("webhookSecret.grantRead lets an operator's role read the secret, that one only", () => {
    let ops: iam.Role | undefined;
    const t = synthDurable({}, {
      beforeSynth: (stack, durable) => {
        ops = new iam.Role(stack, "Ops", { assumedBy: new iam.AccountPrincipal(ACCOUNT) });
        durable.webhookSecret?.grantRead(ops);
      },
    });
    if (!ops) throw new Error("no ops role");
    const opsRole = ops;
    const opsStatements = Object.values(t.template.findResources("AWS::IAM::Policy"))
      .filter((p) => JSON.stringify((p.Properties as { Roles: unknown }).Roles) === JSON.stringify([{ Ref: t.id(opsRole) }]))
      .flatMap((p) => (p.Properties as { PolicyDocument: { Statement: unknown[] } }).PolicyDocument.Statement);
    expect(opsStatements).toEqual([allow({ Action: "ssm:GetParameter", Resource: t.ref(t.durable.webhookSecret?.parameterArn ?? "") })]);
  });
});

describe("the role Scheduler assumes to deliver wakes", () => {
  it("only schedules of this account's wake group can assume it", () => {
    expect(trustOf(durable.schedulerRole)).toEqual([
      allow({
        Action: "sts:AssumeRole",
        Principal: { Service: "scheduler.amazonaws.com" },
        Condition: { StringEquals: { "aws:SourceAccount": ACCOUNT, "aws:SourceArn": ref(durable.scheduleGroup.scheduleGroupArn) } },
      }),
    ]);
  });

  it("may send to the wake queue and its DLQ, nothing else", () => {
    expect(statementsOf(durable.schedulerRole)).toEqual([
      allow({ Sid: "DeliverWakes", Action: "sqs:SendMessage", Resource: [ref(durable.queue.queueArn), ref(durable.deadLetterQueue.queueArn)] }),
    ]);
  });
});

describe("the watchdog's role", () => {
  it("only schedules of this account's default group can assume it; it may invoke this function only", () => {
    expect(trustOf(durable.watchdog.role)).toEqual([
      allow({
        Action: "sts:AssumeRole",
        Principal: { Service: "scheduler.amazonaws.com" },
        Condition: { StringEquals: { "aws:SourceAccount": ACCOUNT, "aws:SourceArn": ref(stack.formatArn({ service: "scheduler", resource: "schedule-group", resourceName: "default" })) } },
      }),
    ]);
    expect(statementsOf(durable.watchdog.role)).toEqual([allow({ Sid: "InvokeWatchdog", Action: "lambda:InvokeFunction", Resource: ref(durable.function.functionArn) })]);
  });
});

/**
 * The IAM actions of the SDK commands constructed in lib/aws (outside comments): each command
 * is looked up in the SDK client packages to find its service.
 */
async function requestsSentByLibAws(): Promise<Set<string>> {
  const dir = fileURLToPath(new URL("../../lib/aws/", import.meta.url));
  const code = readdirSync(dir)
    .filter((f) => f.endsWith(".ts"))
    .map((f) => readFileSync(join(dir, f), "utf8").split("\n").filter((line) => !/^\s*(\*|\/\/|\/\*)/.test(line)).join("\n"))
    .join("\n");
  const commands = new Set([...code.matchAll(/new (\w+)Command\(/g)].map((m) => m[1] ?? ""));
  const services = {
    dynamodb: await import("@aws-sdk/client-dynamodb"),
    sqs: await import("@aws-sdk/client-sqs"),
    scheduler: await import("@aws-sdk/client-scheduler"),
    secretsmanager: await import("@aws-sdk/client-secrets-manager"),
    ssm: await import("@aws-sdk/client-ssm"),
    s3: await import("@aws-sdk/client-s3"),
    lambda: await import("@aws-sdk/client-lambda"),
  };
  /** IAM names an action differently from its command here and there. */
  const iamName: Record<string, string> = { "lambda:Invoke": "lambda:InvokeFunction" };
  const actions = new Set<string>();
  for (const command of commands) {
    const service = Object.entries(services).find(([, sdk]) => `${command}Command` in sdk)?.[0];
    if (service === undefined) throw new Error(`lib/aws sends ${command}: which service is it?`);
    actions.add(iamName[`${service}:${command}`] ?? `${service}:${command}`);
  }
  return actions;
}
