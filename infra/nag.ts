/**
 * The cdk-nag AwsSolutions findings a durable function's design accepts, each acknowledged
 * narrowly (one resource, one rule, one ARN pattern) and with its reason, so a finding a user's
 * own change brings is still reported.
 */
import { type CfnElement, Stack, Token, Validations } from "aws-cdk-lib";
import type { DurableFunction } from "./durable-function.ts";

/**
 * Acknowledges the wildcard grants the design needs (schedules and payload objects are named at
 * run time) and, when the construct chose it, the runtime.
 *
 * @example
 * ```ts
 * acknowledgeFunctionFindings(durable, scheduleGroupName, true);
 * ```
 */
export function acknowledgeFunctionFindings(fn: DurableFunction, scheduleGroupName: string, defaultRuntime: boolean): void {
  const stack = Stack.of(fn);
  const literal = (value: string, pseudo: string) => (Token.isUnresolved(value) ? `<AWS::${pseudo}>` : value);
  const schedules = `arn:<AWS::Partition>:scheduler:${literal(stack.region, "Region")}:${literal(stack.account, "AccountId")}:schedule/${scheduleGroupName}/*`;
  Validations.of(fn.role).acknowledge({
    id: `AwsSolutions-IAM5[Resource::${schedules}]`,
    reason: "Wake schedules are named per run and wake at run time (scheduleName(runId, key)); the grant is every schedule of this function's own group and nothing else",
  });
  if (fn.payloadBucket) {
    const bucketId = stack.resolve(stack.getLogicalId(fn.payloadBucket.node.defaultChild as CfnElement)) as string;
    Validations.of(fn.role).acknowledge({
      id: `AwsSolutions-IAM5[Resource::<${bucketId}.Arn>/runs/*]`,
      reason: "Payload objects are named by run and content hash at run time (runs/<runId>/<createdAt>/<sha256>); the grant is PutObject and GetObject under that prefix of its engine's bucket",
    });
  }
  if (defaultRuntime) {
    // Only for the construct's own choice: a runtime set through functionProps is the user's to explain.
    const runtime = (fn.function.node.defaultChild as { runtime?: string }).runtime ?? "";
    Validations.of(fn.function).acknowledge({
      id: "AwsSolutions-L1",
      reason: `${runtime} on purpose: the newest Lambda Node runtime Waymark is tested on (CI runs Node 22 and 24); a newer one your aws-cdk-lib knows is not tested yet. Move with functionProps.runtime`,
    });
  }
}
