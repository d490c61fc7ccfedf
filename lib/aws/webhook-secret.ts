/**
 * The webhook secret on AWS, read once per Lambda container: from an SSM Parameter Store
 * SecureString (the construct's default; a standard parameter costs nothing at rest) or from a
 * Secrets Manager secret a user brings ($0.40 a month each).
 *
 * The construct's own parameter does not exist until a function first reads it. CloudFormation
 * cannot create a SecureString, and a generated value must never pass through a template, so the
 * reader creates it: a random value, put only if absent. Two cold starts that race both end up
 * with the one value that was written:
 *
 *   A: GetParameter → not found        B: GetParameter → not found
 *   A: PutParameter(Overwrite: false) → ok
 *                                      B: PutParameter(Overwrite: false) → ParameterAlreadyExists
 *                                      B: GetParameter → A's value
 *
 * A value an operator put there first (or copied from an older deployment's secret) is used as
 * it is. Only the `WithDecryption` read and the conditional put are sent: the function's role
 * is granted `ssm:GetParameter` and `ssm:PutParameter` on that one parameter, and the default
 * key (`aws/ssm`) needs no grant.
 */
import { randomBytes } from "node:crypto";
import type { SSMClient } from "@aws-sdk/client-ssm";
import type { SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { MIN_SECRET_LENGTH } from "../http/secret.ts";
import { type AwsRuntimeConfig, ConfigurationError } from "./config.ts";
import { secretsManagerSdk, ssmSdk } from "./sdk.ts";

/** Where the webhook secret is kept. */
export type WebhookSecretSource =
  /** An SSM SecureString parameter (name or ARN); `create`: put a random value if it does not exist. */
  | { kind: "ssm"; name: string; create: boolean }
  /** A Secrets Manager secret's string value. */
  | { kind: "secretsManager"; arn: string };

/** Reads the webhook secret from its source (injectable for tests and custom stores). */
export type SecretReader = (source: WebhookSecretSource) => Promise<string>;

/** Random bytes of a generated secret; hex-encoded, 64 characters (as `openssl rand -hex 32`). */
export const GENERATED_SECRET_BYTES = 32;

/**
 * Where the configuration says the secret is, or undefined when there is none to read (no
 * webhook, or the secret itself is given).
 *
 * @example
 * ```ts
 * webhookSecretSource(configFromEnv()); // { kind: "ssm", name: "/waymark/Orders-1a2b3c/webhook-secret", create: true }
 * ```
 */
export function webhookSecretSource(config: AwsRuntimeConfig): WebhookSecretSource | undefined {
  if (config.webhookSecret !== undefined) return undefined;
  if (config.webhookSecretParameter !== undefined) return { kind: "ssm", name: config.webhookSecretParameter, create: config.webhookSecretCreate === true };
  if (config.webhookSecretArn !== undefined) return { kind: "secretsManager", arn: config.webhookSecretArn };
  return undefined;
}

/**
 * Reads the webhook secret; each service's SDK loads only when its source is read.
 *
 * @example
 * ```ts
 * const secret = await readWebhookSecret({ kind: "ssm", name: "/waymark/orders/webhook-secret", create: true });
 * ```
 */
export function readWebhookSecret(source: WebhookSecretSource, clients: { ssm?: SSMClient; secretsManager?: SecretsManagerClient } = {}): Promise<string> {
  return source.kind === "ssm"
    ? readSsmSecret(source.name, { create: source.create, ...(clients.ssm ? { client: clients.ssm } : {}) })
    : readSecretsManager(source.arn, clients.secretsManager);
}

/**
 * Reads a SecureString parameter, creating it with a random value first when `create` is set
 * and it does not exist. A plain `String` parameter or a value shorter than the webhook needs is
 * a configuration error (nothing is written).
 *
 * @example
 * ```ts
 * const secret = await readSsmSecret("/waymark/orders/webhook-secret", { create: true });
 * ```
 */
export async function readSsmSecret(name: string, o: { create: boolean; client?: SSMClient }): Promise<string> {
  const { SSMClient, GetParameterCommand, PutParameterCommand } = await ssmSdk();
  const client = o.client ?? new SSMClient({});
  const read = async (): Promise<string | undefined> => {
    try {
      const { Parameter } = await client.send(new GetParameterCommand({ Name: name, WithDecryption: true }));
      if (Parameter?.Type !== "SecureString") {
        throw new ConfigurationError(`the webhook secret parameter ${name} is a ${Parameter?.Type ?? "typeless"} parameter: it must be a SecureString`);
      }
      const value = Parameter.Value ?? "";
      if (value.length < MIN_SECRET_LENGTH) throw new ConfigurationError(`the webhook secret in parameter ${name} is ${value.length} characters long: it needs at least ${MIN_SECRET_LENGTH}`);
      return value;
    } catch (err) {
      if (errorNamed(err, "ParameterNotFound")) return undefined;
      throw err;
    }
  };
  const found = await read();
  if (found !== undefined) return found;
  if (!o.create) {
    throw new ConfigurationError(`the webhook secret parameter ${name} does not exist: create it (aws ssm put-parameter --type SecureString --name ${name} --value "$(openssl rand -hex 32)")`);
  }
  try {
    await client.send(
      new PutParameterCommand({
        Name: name,
        Value: randomBytes(GENERATED_SECRET_BYTES).toString("hex"),
        Type: "SecureString",
        // Explicit: an account whose default tier is advanced or intelligent would pay for it.
        Tier: "Standard",
        Overwrite: false,
        Description: "Waymark webhook secret: HMAC request signatures and approval-link tokens (generated by the function on its first read)",
      }),
    );
  } catch (err) {
    if (!errorNamed(err, "ParameterAlreadyExists")) throw err;
    // Another cold start wrote it first: its value is the secret.
  }
  const written = await read();
  if (written === undefined) throw new ConfigurationError(`the webhook secret parameter ${name} was written but cannot be read back`);
  return written;
}

/** By name, not class: an injected client may come from another copy of the SDK. */
function errorNamed(err: unknown, name: string): boolean {
  return err instanceof Error && err.name === name;
}

/**
 * Reads a secret's string from Secrets Manager (for a secret a user brings).
 *
 * @example
 * ```ts
 * const secret = await readSecretsManager("arn:aws:secretsmanager:eu-west-1:123456789012:secret:orders-webhook-AbCdEf");
 * ```
 */
export async function readSecretsManager(arn: string, client?: SecretsManagerClient): Promise<string> {
  const { SecretsManagerClient, GetSecretValueCommand } = await secretsManagerSdk();
  const out = await (client ?? new SecretsManagerClient({})).send(new GetSecretValueCommand({ SecretId: arn }));
  if (!out.SecretString) throw new ConfigurationError(`secret ${arn} has no string value`);
  return out.SecretString;
}
