/**
 * The stand-ins of docs/api/aws.md's examples, where a name means the Lambda host's part
 * (`runtime` is an `AwsRuntime`, `event` an SQS batch); the other names come from stand-ins.ts.
 */
import type { AwsRuntime, LambdaChildren, SqsEvent, sweepsRun } from "waymark/aws";

export declare const runtime: AwsRuntime;
export declare const rt: AwsRuntime;
export declare const event: SqsEvent;
export declare const remote: LambdaChildren;
export declare const run: Parameters<typeof sweepsRun>[2];
