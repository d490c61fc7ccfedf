/**
 * The stand-ins of docs/api/cdk.md's examples, where a name means a construct (`engine` is a
 * `DurableEngine`, `group` a schedule group); the other names come from stand-ins.ts.
 */
import type { aws_dynamodb as dynamodb, aws_scheduler as scheduler } from "aws-cdk-lib";
import type { DurableEngine, DurableGrants } from "waymark/cdk";

export declare const engine: DurableEngine;
export declare const group: scheduler.IScheduleGroup;
export declare const table: dynamodb.TableV2;
export declare const grants: DurableGrants;
