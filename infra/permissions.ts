/**
 * What the durable function may do, written out action by action: the journal (its table and
 * indexes), sending wakes, its own wake schedules, handing Scheduler the role that delivers them,
 * and reading the webhook secret (`webhook-secret.ts`). The event source mapping adds the queue's
 * consume actions.
 */
import * as iam from "aws-cdk-lib/aws-iam";
import type * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import type * as s3 from "aws-cdk-lib/aws-s3";
import type * as scheduler from "aws-cdk-lib/aws-scheduler";
import type * as sqs from "aws-cdk-lib/aws-sqs";
import { Stack } from "aws-cdk-lib";
import type { Construct } from "constructs";
import { JOURNAL_TABLE } from "waymark/aws";
import type { WebhookSecret } from "./webhook-secret.ts";

/**
 * The requests the DynamoDB store sends (`lib/aws/dynamodb-*.ts`); no scan, no batch. `step.transact`'s
 * `TransactWriteItems` is authorised item by item: its journal record by these, the user's items by
 * `fn.grantTransact(table)`.
 */
export const JOURNAL_ACTIONS = ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:Query"] as const;
/** The lists (`byStatus`, `byWake`) only query the indexes. */
export const INDEX_ACTIONS = ["dynamodb:Query"] as const;
/** What `SchedulerWakes` sends: create a wake, read and move it on a conflict, delete it. */
export const SCHEDULE_ACTIONS = ["scheduler:CreateSchedule", "scheduler:GetSchedule", "scheduler:UpdateSchedule", "scheduler:DeleteSchedule"] as const;

/** What `S3PayloadStore` sends: a write-once put and a get, under the payload prefix only. */
export const PAYLOAD_ACTIONS = ["s3:PutObject", "s3:GetObject"] as const;

export const SCHEDULER_PRINCIPAL = "scheduler.amazonaws.com";

/**
 * The resources a durable function's role is granted: its table, queue, schedule group and the
 * rest.
 */
export interface DurableGrants {
  table: dynamodb.ITableV2;
  queue: sqs.IQueue;
  scheduleGroup: scheduler.IScheduleGroup;
  schedulerRole: iam.IRole;
  /** The engine's webhook secret, for a function with a webhook. */
  webhookSecret?: WebhookSecret | undefined;
  payloadBucket?: s3.IBucket | undefined;
}

/**
 * The ARN pattern of every schedule in a group (the names are made per run at run time).
 *
 * @example
 * ```ts
 * schedulesInGroup(stack, group); // arn:aws:scheduler:eu-west-1:123456789012:schedule/<group>/*
 * ```
 */
export function schedulesInGroup(scope: Stack, group: scheduler.IScheduleGroup): string {
  return scope.formatArn({ service: "scheduler", resource: "schedule", resourceName: `${group.scheduleGroupName}/*` });
}

/**
 * The durable function's own statements, least privilege: each names its resources exactly.
 *
 * @example
 * ```ts
 * for (const s of durableFunctionStatements(Stack.of(this), grants)) role.addToPrincipalPolicy(s);
 * ```
 */
export function durableFunctionStatements(stack: Stack, g: DurableGrants): iam.PolicyStatement[] {
  const statements = [
    new iam.PolicyStatement({ sid: "Journal", actions: [...JOURNAL_ACTIONS], resources: [g.table.tableArn] }),
    new iam.PolicyStatement({
      sid: "JournalIndexes",
      actions: [...INDEX_ACTIONS],
      resources: JOURNAL_TABLE.indexes.map((index) => `${g.table.tableArn}/index/${index.indexName}`),
    }),
    new iam.PolicyStatement({ sid: "SendWakes", actions: ["sqs:SendMessage"], resources: [g.queue.queueArn] }),
    new iam.PolicyStatement({ sid: "WakeSchedules", actions: [...SCHEDULE_ACTIONS], resources: [schedulesInGroup(stack, g.scheduleGroup)] }),
    new iam.PolicyStatement({
      sid: "PassSchedulerRole",
      actions: ["iam:PassRole"],
      resources: [g.schedulerRole.roleArn],
      conditions: { StringEquals: { "iam:PassedToService": SCHEDULER_PRINCIPAL } },
    }),
  ];
  if (g.payloadBucket) statements.push(new iam.PolicyStatement({ sid: "Payloads", actions: [...PAYLOAD_ACTIONS], resources: [g.payloadBucket.arnForObjects("runs/*")] }));
  if (g.webhookSecret) statements.push(g.webhookSecret.functionStatement());
  return statements;
}

/**
 * The role EventBridge Scheduler assumes to deliver wakes: send to the wake queue, and to the
 * dead-letter queue when delivery keeps failing. Only schedules of this group may assume it.
 *
 * @example
 * ```ts
 * const role = schedulerDeliveryRole(this, "SchedulerRole", group, queue, deadLetterQueue);
 * ```
 */
export function schedulerDeliveryRole(scope: Construct, id: string, group: scheduler.IScheduleGroup, queue: sqs.IQueue, deadLetterQueue: sqs.IQueue): iam.Role {
  const stack = Stack.of(scope);
  const role = new iam.Role(scope, id, {
    description: "EventBridge Scheduler delivers Waymark wakes to the wake queue",
    // Confused-deputy guard: only schedules of this account's wake group act through it.
    assumedBy: new iam.ServicePrincipal(SCHEDULER_PRINCIPAL, {
      conditions: { StringEquals: { "aws:SourceAccount": stack.account, "aws:SourceArn": group.scheduleGroupArn } },
    }),
  });
  role.addToPrincipalPolicy(new iam.PolicyStatement({ sid: "DeliverWakes", actions: ["sqs:SendMessage"], resources: [queue.queueArn, deadLetterQueue.queueArn] }));
  return role;
}
