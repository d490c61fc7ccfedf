/**
 * The webhook secret read from SSM Parameter Store. SSM has no local peer (nothing on npm
 * emulates Parameter Store), so the SSM client is mocked with `aws-sdk-client-mock`, holding
 * parameters in a map the way Parameter Store does. The contract the mock checks is what the
 * AWS API reference documents and the construct grants:
 *
 *   - the read is `GetParameter { Name, WithDecryption: true }` (a SecureString comes back
 *     decrypted only so), and only `GetParameter` / `PutParameter` are sent (the role's grant);
 *   - a missing parameter answers `ParameterNotFound`; the construct's own parameter is then
 *     created with `PutParameter { Type: "SecureString", Tier: "Standard", Overwrite: false }`
 *     and a random 64-character value, and read back;
 *   - `Overwrite: false` on an existing name answers `ParameterAlreadyExists`: the reader that
 *     loses the race takes the winner's value;
 *   - a parameter that must exist and does not, a `String` parameter, a value too short: a
 *     configuration error that says what to do, and nothing written;
 *   - any other failure (access denied, throttling after the SDK's retries) is surfaced.
 *
 * The runtime part is real: DynamoDB Local for the journal, the real Lambda handler, and a signed
 * Function URL request that only the secret read from the (mocked) parameter can sign.
 */
import { SecretsManagerClient, GetSecretValueCommand } from "@aws-sdk/client-secrets-manager";
import { GetParameterCommand, ParameterAlreadyExists, ParameterNotFound, PutParameterCommand, SSMClient, type PutParameterCommandInput } from "@aws-sdk/client-ssm";
import { mockClient } from "aws-sdk-client-mock";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { durable } from "waymark";
import { ConfigurationError, ENV, configFromEnv } from "../../lib/aws/config.ts";
import { createLambdaHandler } from "../../lib/aws/lambda.ts";
import { GENERATED_SECRET_BYTES, readSecretsManager, readSsmSecret, readWebhookSecret, webhookSecretSource } from "../../lib/aws/webhook-secret.ts";
import { signRequest } from "../../lib/http/signing.ts";
import { localDynamoClient, localSqsClient } from "../setup/clients.ts";
import { createJournalTable } from "../setup/tables.ts";

const NAME = "/waymark/Test-Orders-C225794E/webhook-secret";
const meta = { $metadata: {} };
const client = new SSMClient({ region: "eu-west-1", credentials: { accessKeyId: "x", secretAccessKey: "x" } });
const ssm = mockClient(client);

/** Parameter Store as the mock holds it: name → type and value. */
let store: Map<string, { type: string; value: string }>;

beforeEach(() => {
  ssm.reset();
  store = new Map();
  ssm.on(GetParameterCommand).callsFake(async (input: { Name: string; WithDecryption?: boolean }) => {
    const p = store.get(input.Name);
    if (!p) throw new ParameterNotFound({ message: `Parameter ${input.Name} not found.`, $metadata: {} });
    // Without WithDecryption a SecureString comes back encrypted: the value would be useless.
    return { ...meta, Parameter: { Name: input.Name, Type: p.type, Value: p.type === "SecureString" && !input.WithDecryption ? "AQICAHh…ciphertext" : p.value, Version: 1 } };
  });
  ssm.on(PutParameterCommand).callsFake(async (input: PutParameterCommandInput) => {
    if (store.has(input.Name ?? "") && !input.Overwrite) throw new ParameterAlreadyExists({ message: "The parameter already exists.", $metadata: {} });
    store.set(input.Name ?? "", { type: input.Type ?? "String", value: input.Value ?? "" });
    return { ...meta, Version: 1, Tier: input.Tier ?? "Standard" };
  });
});

/** The commands sent, by name, in order. */
const sent = () => ssm.calls().map((c) => (c.args[0] as { constructor: { name: string } }).constructor.name);

describe("readSsmSecret", () => {
  it("reads an existing SecureString with WithDecryption and writes nothing", async () => {
    store.set(NAME, { type: "SecureString", value: "s".repeat(64) });
    expect(await readSsmSecret(NAME, { create: true, client })).toBe("s".repeat(64));
    expect(ssm.commandCalls(GetParameterCommand).map((c) => c.args[0].input)).toEqual([{ Name: NAME, WithDecryption: true }]);
    expect(sent()).toEqual(["GetParameterCommand"]);
  });

  it("creates the construct's parameter on the first read: a random 64-character SecureString, standard tier, never overwriting; then reads it back", async () => {
    const secret = await readSsmSecret(NAME, { create: true, client });
    expect(secret).toMatch(new RegExp(`^[0-9a-f]{${2 * GENERATED_SECRET_BYTES}}$`));
    expect(sent()).toEqual(["GetParameterCommand", "PutParameterCommand", "GetParameterCommand"]);
    expect(ssm.commandCalls(PutParameterCommand)[0]?.args[0].input).toEqual({
      Name: NAME,
      Value: secret,
      Type: "SecureString",
      Tier: "Standard",
      Overwrite: false,
      Description: expect.stringContaining("Waymark webhook secret"),
    });
    expect(store.get(NAME)).toEqual({ type: "SecureString", value: secret });
    // The next cold start reads the same value, and writes nothing.
    ssm.resetHistory();
    expect(await readSsmSecret(NAME, { create: true, client })).toBe(secret);
    expect(sent()).toEqual(["GetParameterCommand"]);
  });

  it("two cold starts racing: the one whose put finds the parameter takes the value the other wrote", async () => {
    // Both first reads answer "not found" only once both have been asked: the race, every time.
    let asked = 0;
    let bothAsked: () => void = () => {};
    const gate = new Promise<void>((resolve) => (bothAsked = resolve));
    ssm.on(GetParameterCommand).callsFake(async (input: { Name: string }) => {
      if (++asked <= 2) {
        if (asked === 2) bothAsked();
        await gate;
        throw new ParameterNotFound({ message: "not found", $metadata: {} });
      }
      const p = store.get(input.Name);
      return { ...meta, Parameter: { Name: input.Name, Type: p?.type, Value: p?.value } };
    });
    const [a, b] = await Promise.all([readSsmSecret(NAME, { create: true, client }), readSsmSecret(NAME, { create: true, client })]);
    expect(a).toBe(b);
    expect(ssm.commandCalls(PutParameterCommand)).toHaveLength(2); // both tried; one was refused
    expect(store.get(NAME)?.value).toBe(a);
  });

  it("two values in one account never collide: every generated secret is new", async () => {
    const one = await readSsmSecret(`${NAME}-a`, { create: true, client });
    const two = await readSsmSecret(`${NAME}-b`, { create: true, client });
    expect(one).not.toBe(two);
  });

  it("a parameter that must exist (one a user brought) and does not: a configuration error naming it and how to create it; nothing written", async () => {
    const err = await readSsmSecret("/shared/orders-webhook", { create: false, client }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigurationError);
    expect(err).toMatchObject({ retryable: false, message: expect.stringContaining("aws ssm put-parameter --type SecureString --name /shared/orders-webhook") });
    expect(sent()).toEqual(["GetParameterCommand"]);
  });

  it("refuses a plain String parameter and a value shorter than the webhook needs; nothing written", async () => {
    store.set(NAME, { type: "String", value: "x".repeat(64) });
    await expect(readSsmSecret(NAME, { create: true, client })).rejects.toThrow(/is a String parameter: it must be a SecureString/);
    store.set(NAME, { type: "SecureString", value: "short" });
    await expect(readSsmSecret(NAME, { create: true, client })).rejects.toThrow(/is 5 characters long: it needs at least 32/);
    expect(ssm.commandCalls(PutParameterCommand)).toEqual([]);
  });

  it("surfaces any other failure (a role without the grant)", async () => {
    ssm.on(GetParameterCommand).rejects(Object.assign(new Error("User is not authorized to perform: ssm:GetParameter"), { name: "AccessDeniedException" }));
    await expect(readSsmSecret(NAME, { create: true, client })).rejects.toMatchObject({ name: "AccessDeniedException" });
    expect(ssm.commandCalls(PutParameterCommand)).toEqual([]);
  });
});

describe("where the configuration says the secret is", () => {
  const base = { WAYMARK_TABLE: "t", WAYMARK_QUEUE_URL: "q", WAYMARK_QUEUE_ARN: "a", WAYMARK_SCHEDULE_GROUP: "g", WAYMARK_SCHEDULER_ROLE_ARN: "r", WAYMARK_SCHEDULER_DLQ_ARN: "d" };

  it("a parameter (created on first read when the construct made it), a Secrets Manager ARN, or the secret itself", () => {
    expect(webhookSecretSource(configFromEnv({ ...base, [ENV.webhookSecretParameter]: NAME, [ENV.webhookSecretCreate]: "true" }))).toEqual({ kind: "ssm", name: NAME, create: true });
    expect(webhookSecretSource(configFromEnv({ ...base, [ENV.webhookSecretParameter]: "/shared/x" }))).toEqual({ kind: "ssm", name: "/shared/x", create: false });
    expect(webhookSecretSource(configFromEnv({ ...base, [ENV.webhookSecretArn]: "arn:aws:secretsmanager:eu-west-1:1:secret:x" }))).toEqual({ kind: "secretsManager", arn: "arn:aws:secretsmanager:eu-west-1:1:secret:x" });
    expect(webhookSecretSource(configFromEnv({ ...base, [ENV.webhookSecret]: "s".repeat(40), [ENV.webhookSecretParameter]: NAME }))).toBeUndefined();
    expect(webhookSecretSource(configFromEnv(base))).toBeUndefined();
  });

  it.each([
    [{ [ENV.webhookSecretParameter]: NAME, [ENV.webhookSecretArn]: "arn:x" }, /both set: the webhook secret comes from one place/],
    [{ [ENV.webhookSecretCreate]: "true" }, /WAYMARK_WEBHOOK_SECRET_CREATE needs WAYMARK_WEBHOOK_SECRET_PARAMETER/],
    [{ [ENV.webhookSecretParameter]: NAME, [ENV.webhookSecretCreate]: "yes" }, /must be "true" or "false", got "yes"/],
    [{ [ENV.webhookSecretParameter]: "/has space" }, /is not a parameter name/],
    [{ [ENV.watchdogOrphansAfterMs]: "60000" }, /needs WAYMARK_WATCHDOG_HOSTED_ONLY=true/],
  ])("refuses %o", (env, message) => {
    expect(() => configFromEnv({ ...base, ...env })).toThrow(message);
  });

  it("a Secrets Manager secret a user brought: GetSecretValue { SecretId } (also mocked: no local peer)", async () => {
    const sm = new SecretsManagerClient({ region: "eu-west-1", credentials: { accessKeyId: "x", secretAccessKey: "x" } });
    const mock = mockClient(sm);
    mock.on(GetSecretValueCommand, { SecretId: "arn:aws:secretsmanager:eu-west-1:1:secret:x" }).resolves({ SecretString: "m".repeat(40) });
    expect(await readWebhookSecret({ kind: "secretsManager", arn: "arn:aws:secretsmanager:eu-west-1:1:secret:x" }, { secretsManager: sm })).toBe("m".repeat(40));
    mock.on(GetSecretValueCommand).resolves({ SecretBinary: new Uint8Array([1]) });
    await expect(readSecretsManager("arn:aws:secretsmanager:eu-west-1:1:secret:y", sm)).rejects.toThrow(/has no string value/);
    expect(ssm.calls()).toEqual([]);
  });
});

describe("the Lambda handler with the construct's environment", () => {
  const dynamodb = localDynamoClient();
  const sqs = localSqsClient();
  afterAll(() => {
    dynamodb.destroy();
    sqs.destroy();
  });
  const flow = durable({ name: "greet", input: z.object({ name: z.string() }) }, async ({ name }, step) => step.run("hello", () => `hello ${name}`));

  async function handler() {
    const tableName = await createJournalTable(dynamodb, "secret");
    const config = configFromEnv({
      WAYMARK_TABLE: tableName,
      WAYMARK_QUEUE_URL: "http://127.0.0.1:1/000000000000/unused",
      WAYMARK_QUEUE_ARN: "arn:aws:sqs:eu-west-1:000000000000:unused",
      WAYMARK_SCHEDULE_GROUP: "g",
      WAYMARK_SCHEDULER_ROLE_ARN: "arn:aws:iam::000000000000:role/r",
      WAYMARK_SCHEDULER_DLQ_ARN: "arn:aws:sqs:eu-west-1:000000000000:dlq",
      [ENV.webhookSecretParameter]: NAME,
      [ENV.webhookSecretCreate]: "true",
    });
    return createLambdaHandler({ workflows: [flow], config, clients: { dynamodb, sqs, ssm: client }, log: () => {}, metrics: false, tracing: false });
  }

  const get = (path: string, headers: Record<string, string>) => ({
    version: "2.0",
    rawPath: path,
    rawQueryString: "",
    headers,
    isBase64Encoded: false,
    requestContext: { http: { method: "GET", path } },
  });
  const context = { getRemainingTimeInMillis: () => 30_000 } as never;

  it("creates the secret on its cold start and answers requests signed with it, and only those", async () => {
    const h = await handler();
    const path = "/runs/nobody-1";
    // The first invocation is the cold start: the parameter is created, once.
    const unsigned = (await h(get(path, {}), context)) as { statusCode: number };
    expect(unsigned.statusCode).toBe(401);
    const secret = store.get(NAME)?.value ?? "";
    expect(secret).toHaveLength(64);
    const signed = (await h(get(path, signRequest(secret, { method: "GET", path, body: "" })), context)) as { statusCode: number };
    expect(signed.statusCode).toBe(404); // authenticated: there is just no such run
    const forged = (await h(get(path, signRequest("f".repeat(64), { method: "GET", path, body: "" })), context)) as { statusCode: number };
    expect(forged.statusCode).toBe(401);
    // One container reads the secret once.
    expect(sent()).toEqual(["GetParameterCommand", "PutParameterCommand", "GetParameterCommand"]);
  });

  it("a cold start whose secret cannot be read fails the invocation, and the next one tries again", async () => {
    ssm.on(GetParameterCommand).rejectsOnce(Object.assign(new Error("Rate exceeded"), { name: "ThrottlingException" }));
    store.set(NAME, { type: "SecureString", value: "k".repeat(64) });
    const h = await handler();
    await expect(h(get("/runs/x", {}), context)).rejects.toMatchObject({ name: "ThrottlingException" });
    ssm.on(GetParameterCommand).callsFake(async (input: { Name: string }) => ({ ...meta, Parameter: { Name: input.Name, Type: "SecureString", Value: store.get(input.Name)?.value } }));
    const path = "/runs/x";
    expect(((await h(get(path, signRequest("k".repeat(64), { method: "GET", path, body: "" })), context)) as { statusCode: number }).statusCode).toBe(404);
  });
});
