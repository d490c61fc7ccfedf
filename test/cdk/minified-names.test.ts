/**
 * The construct bundles without esbuild's keepNames (infra/bundling.ts): a minifier renames
 * classes and functions, so nothing may hang on `constructor.name`. This builds a workflow whose
 * steps fail (fixtures/failing-flow.ts) with the construct's real esbuild bundle, runs it as Lambda
 * would (plain Node, a fresh process per invocation, the template's environment) on DynamoDB
 * Local and the SQS emulator, and checks the names the journal keeps and the workflow catches:
 * Waymark's errors, a user's error with a literal name, retryable or not.
 */
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { CreateQueueCommand, DeleteMessageCommand, GetQueueAttributesCommand, ReceiveMessageCommand } from "@aws-sdk/client-sqs";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { DynamoJournalStore } from "../../lib/aws/dynamodb-store.ts";
import { localDynamoClient, localSqsClient, uniqueName } from "../setup/clients.ts";
import { LOCAL_CREDENTIALS, LOCAL_REGION } from "../setup/local-aws.ts";
import { createJournalTable } from "../setup/tables.ts";
import { synthDurable } from "./stack.ts";

const repo = fileURLToPath(new URL("../../", import.meta.url));
mkdirSync(join(repo, ".waymark"), { recursive: true });
const outdir = mkdtempSync(join(repo, ".waymark", "cdk-names-test-"));
afterAll(() => rmSync(outdir, { recursive: true, force: true }));
const entry = fileURLToPath(new URL("./fixtures/failing-flow.ts", import.meta.url));
const t = synthDurable({ entry, handler: "failingFlow", webhook: false }, { bundle: true, outdir });
const fn = Object.values(t.template.findResources("AWS::Lambda::Function"))[0] as {
  Properties: { Code: { S3Key: string }; Environment: { Variables: Record<string, unknown> } };
};
const assetDir = join(outdir, `asset.${fn.Properties.Code.S3Key.replace(/\.zip$/, "")}`);
const bundle = join(assetDir, "index.mjs");

describe("a minified bundle without keepNames", () => {
  let env: Record<string, string>;
  let queueUrl: string;
  let store: DynamoJournalStore;

  beforeAll(async () => {
    const dynamodb = localDynamoClient();
    const tableName = await createJournalTable(dynamodb, "names");
    store = new DynamoJournalStore({ client: dynamodb, tableName, retentionDays: 30 });
    const sqs = localSqsClient();
    const name = uniqueName("names-wakes");
    queueUrl = (await sqs.send(new CreateQueueCommand({ QueueName: name }))).QueueUrl ?? "";
    const queueArn = (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ["QueueArn"] }))).Attributes?.QueueArn ?? "";
    const local: Record<string, string> = {
      [JSON.stringify(t.ref(t.durable.table.tableName))]: tableName,
      [JSON.stringify(t.ref(t.durable.queue.queueUrl))]: queueUrl,
      [JSON.stringify(t.ref(t.durable.queue.queueArn))]: queueArn,
      [JSON.stringify(t.ref(t.durable.deadLetterQueue.queueArn))]: queueArn,
      [JSON.stringify(t.ref(t.durable.schedulerRole.roleArn))]: "arn:aws:iam::000000000000:role/no-scheduler-here",
      [JSON.stringify(t.ref(t.durable.payloadBucket?.bucketName ?? ""))]: "no-payloads-here",
    };
    env = {};
    for (const [key, value] of Object.entries(fn.Properties.Environment.Variables)) {
      const v = typeof value === "string" ? value : local[JSON.stringify(value)];
      if (v === undefined) throw new Error(`no local stand-in for ${key} = ${JSON.stringify(value)}`);
      env[key] = v;
    }
  });

  async function invoke(event: unknown): Promise<unknown> {
    const script = `const m = await import(process.env.BUNDLE); const out = await m.failingFlow(JSON.parse(process.env.EVENT), { getRemainingTimeInMillis: () => 55000 }); console.log("RESULT " + JSON.stringify(out ?? null));`;
    const childEnv = {
      PATH: process.env.PATH ?? "",
      ...env,
      BUNDLE: pathToFileURL(bundle).href,
      EVENT: JSON.stringify(event),
      AWS_REGION: LOCAL_REGION,
      AWS_ACCESS_KEY_ID: LOCAL_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: LOCAL_CREDENTIALS.secretAccessKey,
      AWS_ENDPOINT_URL_DYNAMODB: inject("dynamodbEndpoint"),
      AWS_ENDPOINT_URL_SQS: inject("sqsEndpoint"),
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true",
    };
    const child = await new Promise<{ failed: boolean; stdout: string; stderr: string }>((resolve) => {
      execFile(process.execPath, ["--input-type=module", "-e", script], { cwd: assetDir, encoding: "utf8", timeout: 30_000, env: childEnv }, (error, stdout, stderr) =>
        resolve({ failed: error !== null, stdout, stderr }),
      );
    });
    const line = child.stdout.split("\n").find((l) => l.startsWith("RESULT "));
    if (child.failed || line === undefined) throw new Error(`invocation failed:\n${child.stdout}\n${child.stderr}`);
    return JSON.parse(line.slice("RESULT ".length));
  }

  async function nextWakeEvent(): Promise<{ Records: unknown[] } | undefined> {
    const sqs = localSqsClient();
    const { Messages } = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 1, WaitTimeSeconds: 2 }));
    const m = Messages?.[0];
    if (!m) return undefined;
    await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: m.ReceiptHandle }));
    return { Records: [{ messageId: m.MessageId, body: m.Body, eventSource: "aws:sqs", attributes: { ApproximateReceiveCount: "1" } }] };
  }

  it("is minified without kept names: a class's name is in it once, as its literal name field", () => {
    const code = readFileSync(bundle, "utf8");
    // keepNames would add each class's name again (esbuild's __name(class, "CardDeclinedError")).
    for (const name of ["CardDeclinedError", "FraudSuspectedError", "StepFailedError"]) expect(code.split(`"${name}"`).length - 1, name).toBe(1);
    expect(code).not.toMatch(/\bclass CardDeclinedError\b/);
  });

  it("journals and throws every error under its own name", async () => {
    expect(await invoke({ waymark: "start", runId: "names-1", input: { orderId: "o-1" } })).toMatchObject({ ok: true, created: true });
    // A bad start is answered with the error's name, not a mangled one.
    expect(await invoke({ waymark: "start", runId: 7, input: {} })).toMatchObject({ ok: false, error: { name: "InvalidInputError" } });
    const deadline = Date.now() + 60_000;
    while ((await store.getRun("names-1"))?.status !== "completed") {
      if (Date.now() > deadline) throw new Error(`run not completed: ${JSON.stringify(await store.getRun("names-1"))}`);
      const wake = await nextWakeEvent();
      if (wake) expect(await invoke(wake)).toEqual({ batchItemFailures: [] });
    }
    const run = await store.getRun("names-1");
    expect(run?.result).toEqual({
      caught: [
        { name: "StepFailedError", step: "charge", failure: "NonRetryableError", attempts: 1, fields: { code: "51" } },
        { name: "StepFailedError", step: "fraud", failure: "FraudSuspectedError", attempts: 1 },
        { name: "StepFailedError", step: "retry-once", failure: "CardDeclinedError", attempts: 2 },
      ],
    });
  });
});
