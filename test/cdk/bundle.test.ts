/**
 * The function code `cdk deploy` would upload: the construct's real esbuild bundle of the order
 * workflow, loaded by plain Node (no tsx, no source conditions) in a fresh process per
 * invocation, like a Lambda cold start, with the environment the template gives the function.
 * It runs against DynamoDB Local and the SQS emulator. Two services have no local peer, so small
 * HTTP stand-ins answer what the bundle sends and record it: SSM Parameter Store (GetParameter and
 * PutParameter over its JSON protocol, to check the bundle loads the SSM client, creates the
 * webhook secret's parameter on its first cold start and reads it on every later one) and
 * EventBridge Scheduler (to check the requests carry the template's group, role, queue and DLQ).
 * Everything else is the template's wiring.
 */
import { execFile } from "node:child_process";
import { createServer, type Server } from "node:http";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { builtinModules } from "node:module";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { CreateQueueCommand, DeleteMessageCommand, GetQueueAttributesCommand, ReceiveMessageCommand } from "@aws-sdk/client-sqs";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ENV } from "waymark/aws";
import { ESM_REQUIRE_BANNER, SOURCE_MAP_NODE_OPTIONS } from "waymark/cdk";
import { DynamoJournalStore } from "../../lib/aws/dynamodb-store.ts";
import { signRequest } from "../../lib/http/signing.ts";
import { localDynamoClient, localSqsClient, uniqueName } from "../setup/clients.ts";
import { LOCAL_CREDENTIALS, LOCAL_REGION } from "../setup/local-aws.ts";
import { createJournalTable } from "../setup/tables.ts";
import { synthDurable } from "./stack.ts";

// Inside the repository, so the bundle's external `@aws-sdk/*` imports resolve from node_modules
// as they do from the Lambda runtime's own SDK.
const repo = fileURLToPath(new URL("../../", import.meta.url));
mkdirSync(join(repo, ".waymark"), { recursive: true });
const outdir = mkdtempSync(join(repo, ".waymark", "cdk-bundle-test-"));
const t = synthDurable({}, { bundle: true, outdir });
const fnResource = Object.values(t.template.findResources("AWS::Lambda::Function"))[0] as {
  Properties: { Handler: string; Code: { S3Key: string }; Environment: { Variables: Record<string, unknown> } };
};
// The asset's folder in the cloud assembly is named by the hash its S3 key carries.
const assetDir = join(outdir, `asset.${fnResource.Properties.Code.S3Key.replace(/\.zip$/, "")}`);
const bundle = join(assetDir, "index.mjs");
afterAll(() => rmSync(outdir, { recursive: true, force: true }));
const env0 = fnResource.Properties.Environment.Variables;

describe("the bundle", () => {
  const code = readFileSync(bundle, "utf8");

  it("is ESM with the createRequire banner and a source map", () => {
    expect(code.startsWith(ESM_REQUIRE_BANNER)).toBe(true);
    expect(existsSync(`${bundle}.map`)).toBe(true);
    expect(code).toMatch(/\/\/# sourceMappingURL=index\.mjs\.map\s*$/);
  });

  it("has a source map that names the sources without carrying their text, which Node would parse at every cold start", () => {
    const map = JSON.parse(readFileSync(`${bundle}.map`, "utf8")) as { sources: string[]; sourcesContent?: unknown };
    expect(map.sources.some((s) => s.endsWith("lib/core/engine.ts"))).toBe(true);
    expect(map.sourcesContent).toBeUndefined();
    expect(env0.NODE_OPTIONS).toBe(SOURCE_MAP_NODE_OPTIONS);
  });

  it("maps a stack trace from the bundle to Waymark's sources under the template's NODE_OPTIONS", async () => {
    // No configuration in the environment: the handler's first invocation throws from lib/aws/config.ts.
    const script = "const m = await import(process.env.BUNDLE); try { await m.orderFlow({}, { getRemainingTimeInMillis: () => 1000 }); } catch (err) { console.log(err.stack); }";
    const stdout = await new Promise<string>((resolve, reject) => {
      execFile(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8", timeout: 30_000, env: { PATH: process.env.PATH ?? "", NODE_OPTIONS: String(env0.NODE_OPTIONS), BUNDLE: pathToFileURL(bundle).href } }, (error, out, stderr) =>
        error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(out),
      );
    });
    expect(stdout).toMatch(/\(.*lib\/aws\/config\.ts:\d+:\d+\)/);
  });

  it("imports nothing but Node built-ins and the AWS SDK v3 (left to the Lambda runtime); no SQLite", () => {
    const specifiers = new Set([...code.matchAll(/(?:\bfrom|\bimport)\s*\(?\s*["']([^"']+)["']/g)].map((m) => m[1] ?? ""));
    const outside = [...specifiers].filter((s) => !s.startsWith("node:") && !builtinModules.includes(s) && !s.startsWith("@aws-sdk/"));
    expect(outside).toEqual([]);
    expect([...specifiers].filter((s) => s.startsWith("@aws-sdk/"))).toEqual(expect.arrayContaining(["@aws-sdk/client-dynamodb", "@aws-sdk/client-sqs", "@aws-sdk/client-scheduler"]));
    expect(code).not.toContain("better-sqlite3");
  });

  it("loads no SDK client when imported: every @aws-sdk import is a dynamic import(), made on first use", () => {
    const staticImports = [...code.matchAll(/\bfrom\s*["'](@aws-sdk\/[^"']+)["']/g)].map((m) => m[1]);
    expect(staticImports).toEqual([]);
    for (const client of ["dynamodb", "sqs", "scheduler", "ssm", "secrets-manager", "s3"]) expect(code).toContain(`import("@aws-sdk/client-${client}")`);
  });
});

describe("the bundle, invoked as Lambda would, on DynamoDB Local and the SQS emulator", () => {
  const demoDir = join(outdir, "demo");
  let env: Record<string, string>;
  let queueUrl: string;
  let store: DynamoJournalStore;
  let scheduler: { server: Server; endpoint: string; requests: Array<{ method: string; url: string; body: Record<string, unknown> }> };
  let ssm: Awaited<ReturnType<typeof ssmStandIn>>;

  beforeAll(async () => {
    scheduler = await schedulerStandIn();
    ssm = await ssmStandIn();
    const dynamodb = localDynamoClient();
    const tableName = await createJournalTable(dynamodb, "bundle");
    store = new DynamoJournalStore({ client: dynamodb, tableName, retentionDays: 30 });
    const sqs = localSqsClient();
    const name = uniqueName("bundle-wakes");
    const dlqUrl = (await sqs.send(new CreateQueueCommand({ QueueName: `${name}-dlq` }))).QueueUrl ?? "";
    queueUrl = (await sqs.send(new CreateQueueCommand({ QueueName: name }))).QueueUrl ?? "";
    const arn = async (url: string) => (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ["QueueArn"] }))).Attributes?.QueueArn ?? "";
    const local: Record<string, string> = {
      [JSON.stringify(t.ref(t.durable.table.tableName))]: tableName,
      [JSON.stringify(t.ref(t.durable.queue.queueUrl))]: queueUrl,
      [JSON.stringify(t.ref(t.durable.queue.queueArn))]: await arn(queueUrl),
      [JSON.stringify(t.ref(t.durable.deadLetterQueue.queueArn))]: await arn(dlqUrl),
      [JSON.stringify(t.ref(t.durable.schedulerRole.roleArn))]: "arn:aws:iam::000000000000:role/no-scheduler-here",
      // No value here goes by reference: the bucket is named but never asked (its SDK never loads).
      [JSON.stringify(t.ref(t.durable.payloadBucket?.bucketName ?? ""))]: "no-payloads-here",
    };
    env = { WAYMARK_DEMO_DIR: demoDir };
    for (const [key, value] of Object.entries(fnResource.Properties.Environment.Variables)) {
      if (typeof value === "string") env[key] = value;
      else env[key] = local[JSON.stringify(value)] ?? fail(`no local stand-in for ${key} = ${JSON.stringify(value)}`);
    }
  });

  /** One invocation in a new Node process: import the bundle, call the handler the template names. */
  async function invoke(event: unknown): Promise<unknown> {
    const exportName = fnResource.Properties.Handler.replace(/^index\./, "");
    const script = `const m = await import(process.env.BUNDLE); const out = await m[process.env.HANDLER](JSON.parse(process.env.EVENT), { getRemainingTimeInMillis: () => 55000 }); console.log("RESULT " + JSON.stringify(out ?? null));`;
    const childEnv = {
      PATH: process.env.PATH ?? "",
      ...env,
      BUNDLE: pathToFileURL(bundle).href,
      HANDLER: exportName,
      EVENT: JSON.stringify(event),
      AWS_REGION: LOCAL_REGION,
      AWS_ACCESS_KEY_ID: LOCAL_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: LOCAL_CREDENTIALS.secretAccessKey,
      AWS_ENDPOINT_URL_DYNAMODB: inject("dynamodbEndpoint"),
      AWS_ENDPOINT_URL_SQS: inject("sqsEndpoint"),
      AWS_ENDPOINT_URL_SCHEDULER: scheduler.endpoint,
      AWS_ENDPOINT_URL_SSM: ssm.endpoint,
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true",
    };
    // Asynchronous: the Scheduler stand-in answers from this process meanwhile.
    const child = await new Promise<{ failed: boolean; stdout: string; stderr: string }>((resolve) => {
      execFile(process.execPath, ["--input-type=module", "-e", script], { cwd: assetDir, encoding: "utf8", timeout: 30_000, env: childEnv }, (error, stdout, stderr) =>
        resolve({ failed: error !== null, stdout, stderr }),
      );
    });
    const line = child.stdout.split("\n").find((l) => l.startsWith("RESULT "));
    if (child.failed || line === undefined) throw new Error(`invocation failed:\n${child.stdout}\n${child.stderr}`);
    return JSON.parse(line.slice("RESULT ".length));
  }

  /** Takes the next wake off the queue as the event source mapping would, as a one-record SQS event. */
  async function nextWakeEvent(): Promise<{ Records: unknown[] }> {
    const sqs = localSqsClient();
    const deadline = Date.now() + 10_000;
    for (;;) {
      const { Messages } = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 1, WaitTimeSeconds: 1 }));
      const m = Messages?.[0];
      if (m) {
        await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: m.ReceiptHandle }));
        return { Records: [{ messageId: m.MessageId, body: m.Body, eventSource: "aws:sqs", attributes: { ApproximateReceiveCount: "1" } }] };
      }
      if (Date.now() > deadline) throw new Error("no wake message within 10 s");
    }
  }

  it("starts the order, suspends it for approval, takes a signed signal through the Function URL, and ships it", async () => {
    const order = { orderId: "8472", sku: "LAMP-01", quantity: 1, amount: 129.5, email: "kim@example.com", address: "1 Harbour St" };
    expect(await invoke({ waymark: "start", runId: "order-1", input: order })).toMatchObject({ ok: true, runId: "order-1", created: true, status: "pending" });
    // The first cold start made the webhook secret: the template's parameter, a SecureString, standard tier, never overwritten.
    const name = env0[ENV.webhookSecretParameter];
    expect(ssm.requests.map((r) => r.target)).toEqual(["GetParameter", "PutParameter", "GetParameter"]);
    expect(ssm.requests[0]?.body).toEqual({ Name: name, WithDecryption: true });
    expect(ssm.requests[1]?.body).toMatchObject({ Name: name, Type: "SecureString", Tier: "Standard", Overwrite: false, Value: expect.stringMatching(/^[0-9a-f]{64}$/) });
    const secret = ssm.parameters.get(String(name))?.value ?? "";

    expect(await invoke(await nextWakeEvent())).toEqual({ batchItemFailures: [] });
    expect(await store.getRun("order-1")).toMatchObject({ status: "suspended", waitingFor: "signal:approval" });
    // The 24 h approval timeout is a Scheduler schedule in the construct's group, delivered by its role to its queue.
    const [create] = scheduler.requests;
    expect(create).toMatchObject({
      method: "POST",
      body: {
        GroupName: env0[ENV.scheduleGroup],
        Target: { Arn: env[ENV.queueArn], RoleArn: env[ENV.schedulerRoleArn], DeadLetterConfig: { Arn: env[ENV.schedulerDeadLetterArn] } },
      },
    });

    const body = JSON.stringify({ payload: { approved: true, approver: "ops" }, signalId: "ops-1" });
    const path = "/runs/order-1/signals/approval";
    const headers = { "content-type": "application/json", ...signRequest(secret, { method: "POST", path, body }) };
    const http = { version: "2.0", rawPath: path, rawQueryString: "", headers, body, isBase64Encoded: false, requestContext: { http: { method: "POST", path } } };
    expect(await invoke(http)).toMatchObject({ statusCode: 202 });

    expect(await invoke(await nextWakeEvent())).toEqual({ batchItemFailures: [] });
    expect(await store.getRun("order-1")).toMatchObject({ status: "completed", result: { status: "shipped", approvedBy: "ops" } });
    // Every later cold start read the secret once and wrote nothing.
    expect(ssm.requests.map((r) => r.target)).toEqual(["GetParameter", "PutParameter", "GetParameter", "GetParameter", "GetParameter", "GetParameter"]);
    // The approval came first: its timeout schedule is deleted.
    expect(scheduler.requests.map((r) => r.method)).toEqual(["POST", "DELETE"]);
    const path0 = (url: string | undefined) => new URL(url ?? "", "http://stand-in");
    expect(path0(scheduler.requests[1]?.url).pathname).toBe(path0(create?.url).pathname);
    expect(path0(scheduler.requests[1]?.url).searchParams.get("groupName")).toBe(env0[ENV.scheduleGroup]);
  });

  it("answers the watchdog's event", async () => {
    expect(await invoke({ waymark: "watchdog" })).toEqual({ woken: [] });
  });
});

/**
 * Answers GetParameter and PutParameter (SSM's JSON 1.1 protocol: POST /, the operation in
 * `X-Amz-Target`, errors as `__type`) from a map, as Parameter Store would, and records them.
 */
async function ssmStandIn() {
  const requests: Array<{ target: string; body: Record<string, unknown> }> = [];
  const parameters = new Map<string, { type: string; value: string }>();
  const server = createServer((req, res) => {
    let raw = "";
    req.on("data", (chunk: Buffer) => (raw += chunk.toString()));
    req.on("end", () => {
      const target = String(req.headers["x-amz-target"] ?? "").replace(/^AmazonSSM\./, "");
      const body = (raw ? JSON.parse(raw) : {}) as { Name?: string; Value?: string; Type?: string; Overwrite?: boolean; WithDecryption?: boolean };
      requests.push({ target, body: body as Record<string, unknown> });
      const answer = (status: number, out: unknown) => {
        res.writeHead(status, { "content-type": "application/x-amz-json-1.1" });
        res.end(JSON.stringify(out));
      };
      const found = parameters.get(body.Name ?? "");
      if (target === "GetParameter") {
        if (!found) return answer(400, { __type: "ParameterNotFound", message: `Parameter ${body.Name} not found.` });
        return answer(200, { Parameter: { Name: body.Name, Type: found.type, Value: body.WithDecryption ? found.value : "ciphertext", Version: 1 } });
      }
      if (target === "PutParameter") {
        if (found && !body.Overwrite) return answer(400, { __type: "ParameterAlreadyExists", message: "The parameter already exists." });
        parameters.set(body.Name ?? "", { type: body.Type ?? "String", value: body.Value ?? "" });
        return answer(200, { Version: 1, Tier: "Standard" });
      }
      return answer(400, { __type: "InvalidAction", message: `the stand-in does not answer ${target}` });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const address = server.address();
  if (typeof address !== "object" || address === null) throw new Error("the SSM stand-in has no port");
  return { endpoint: `http://127.0.0.1:${address.port}`, requests, parameters };
}

/** Answers CreateSchedule and DeleteSchedule (Scheduler's REST-JSON API) and records them. */
async function schedulerStandIn(): Promise<{ server: Server; endpoint: string; requests: Array<{ method: string; url: string; body: Record<string, unknown> }> }> {
  const requests: Array<{ method: string; url: string; body: Record<string, unknown> }> = [];
  const server = createServer((req, res) => {
    let raw = "";
    req.on("data", (chunk: Buffer) => (raw += chunk.toString()));
    req.on("end", () => {
      requests.push({ method: req.method ?? "", url: req.url ?? "", body: raw ? (JSON.parse(raw) as Record<string, unknown>) : {} });
      res.writeHead(200, { "content-type": "application/json" });
      res.end(req.method === "POST" ? JSON.stringify({ ScheduleArn: `arn:aws:scheduler:${LOCAL_REGION}:000000000000:schedule${req.url ?? ""}` }) : "{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const address = server.address();
  if (typeof address !== "object" || address === null) throw new Error("the Scheduler stand-in has no port");
  return { server, endpoint: `http://127.0.0.1:${address.port}`, requests };
}

function fail(message: string): never {
  throw new Error(message);
}
