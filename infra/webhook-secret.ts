/**
 * Where an engine's webhook secret lives, as the construct wires it: the environment the runtime
 * reads (`lib/aws/webhook-secret.ts`), the one statement a function's role needs, and a grant
 * for people and tools that sign requests.
 *
 * The default is an SSM Parameter Store SecureString, standard tier: free at rest, where a Secrets
 * Manager secret is $0.40 a month. CloudFormation cannot create a SecureString, and a generated
 * value must not pass through a template or a shell, so the construct only names the parameter;
 * the first function of the engine to read it creates it with a random value (a put that fails if
 * the parameter exists). A value put there before the first read is used as it is.
 */
import { Names, Stack } from "aws-cdk-lib";
import * as iam from "aws-cdk-lib/aws-iam";
import type * as secretsmanager from "aws-cdk-lib/aws-secretsmanager";
import type * as ssm from "aws-cdk-lib/aws-ssm";
import type { Construct } from "constructs";
import { ENV } from "waymark/aws";

/** What the runtime sends for the default parameter: a decrypting read, and the put that creates it. */
export const SECRET_PARAMETER_ACTIONS = ["ssm:GetParameter", "ssm:PutParameter"] as const;

/** A secret a user brings: an existing SecureString parameter or Secrets Manager secret. */
export type WebhookSecretOption = ssm.IParameter | secretsmanager.ISecret;

/**
 * An engine's webhook secret.
 *
 * @example
 * ```ts
 * const secret = WebhookSecret.forEngine(engine); // /waymark/<stack>-<engine>-<hash>/webhook-secret
 * secret.grantRead(opsRole);                      // ssm:GetParameter on that parameter
 * ```
 */
export class WebhookSecret {
  /**
   * The parameter's name (the default one or one brought); undefined for a Secrets Manager
   * secret.
   */
  readonly parameterName: string | undefined;
  /** The parameter's ARN; undefined for a Secrets Manager secret. */
  readonly parameterArn: string | undefined;
  /** The Secrets Manager secret brought; undefined for a parameter. */
  readonly secret: secretsmanager.ISecret | undefined;
  /** True for the construct's own parameter: the runtime creates it on its first read. */
  readonly generated: boolean;

  private constructor(o: { parameterName?: string; parameterArn?: string; secret?: secretsmanager.ISecret; generated: boolean }) {
    this.parameterName = o.parameterName;
    this.parameterArn = o.parameterArn;
    this.secret = o.secret;
    this.generated = o.generated;
  }

  /**
   * The engine's secret: the one brought, or a parameter named uniquely for `scope` (stack and
   * path) in this account and region.
   */
  static forEngine(scope: Construct, brought?: WebhookSecretOption): WebhookSecret {
    if (brought !== undefined && "secretArn" in brought) return new WebhookSecret({ secret: brought, generated: false });
    if (brought !== undefined) return new WebhookSecret({ parameterName: brought.parameterName, parameterArn: brought.parameterArn, generated: false });
    const name = `/waymark/${Names.uniqueResourceName(scope, { maxLength: 200, separator: "-" })}/webhook-secret`;
    const arn = Stack.of(scope).formatArn({ service: "ssm", resource: "parameter", resourceName: name.slice(1) });
    return new WebhookSecret({ parameterName: name, parameterArn: arn, generated: true });
  }

  /** The variables `configFromEnv` reads the secret's place from. */
  environment(): Record<string, string> {
    if (this.secret) return { [ENV.webhookSecretArn]: this.secret.secretArn };
    const env: Record<string, string> = { [ENV.webhookSecretParameter]: this.parameterName ?? "" };
    if (this.generated) env[ENV.webhookSecretCreate] = "true";
    return env;
  }

  /** The durable function's statement: read (and for the default parameter, create) this secret and nothing else. */
  functionStatement(): iam.PolicyStatement {
    if (this.secret) return new iam.PolicyStatement({ sid: "ReadWebhookSecret", actions: ["secretsmanager:GetSecretValue"], resources: [this.secret.secretArn] });
    return new iam.PolicyStatement({
      sid: "WebhookSecret",
      actions: this.generated ? [...SECRET_PARAMETER_ACTIONS] : ["ssm:GetParameter"],
      resources: [this.parameterArn ?? ""],
    });
  }

  /**
   * Lets `grantee` read the secret (to sign requests: an operator's role, a CI job). A brought
   * parameter encrypted with a customer managed key also needs that key's `grantDecrypt`.
   */
  grantRead(grantee: iam.IGrantable): iam.Grant {
    if (this.secret) return this.secret.grantRead(grantee);
    return iam.Grant.addToPrincipal({ grantee, actions: ["ssm:GetParameter"], resourceArns: [this.parameterArn ?? ""] });
  }
}
