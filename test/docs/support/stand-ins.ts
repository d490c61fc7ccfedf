/**
 * Compile-only stand-ins for the names the TSDoc examples (docs/api) use and do not define: a
 * workflow's `step`, a store, a runtime, an order, your services, the third-party imports an
 * example leaves out. The samples test imports, into each example, the names it uses from here
 * (after the package's own exports: test/docs/samples-prelude.ts). Nothing here runs: `declare`
 * gives each name a type and no value.
 */
import type { Construct } from "constructs";
import type { aws_iam as iam, aws_lambda as lambda, aws_sns as sns, aws_sqs as sqs_, aws_dynamodb, Stack as CdkStack } from "aws-cdk-lib";
import type { DynamoDBClient as Dynamo } from "@aws-sdk/client-dynamodb";
import type { SQSClient as Sqs } from "@aws-sdk/client-sqs";
import type { S3Client } from "@aws-sdk/client-s3";
import type { LanguageModelV3, LanguageModelV3Middleware } from "@ai-sdk/provider";
import type { Tool } from "ai";
import { z as zod } from "zod";
import { durable, type ChildEnd, type EngineOptions, type JournalStore, type Logger as WaymarkLogger, type Saga, type Step, type StepRunContext, type WakeQueue, type Wake, type createTracing } from "waymark";
import type { AwsRuntimeConfig, SqsRecord, SqsWakes } from "waymark/aws";
import type { DurableEngine } from "waymark/cdk";
import type { HttpRequest, HttpResponse } from "waymark/http";
import type { LocalRuntime } from "waymark/local";
import type { TestRuntime } from "waymark/testing";
import { Order, type Approval } from "../../../functions/order-flow.ts";

// Third-party names an example uses without its import line.
export { App, Duration, RemovalPolicy, Stack, aws_dynamodb as dynamodb } from "aws-cdk-lib";
export { NodejsFunction } from "aws-cdk-lib/aws-lambda-nodejs";
export { SnsAction } from "aws-cdk-lib/aws-cloudwatch-actions";
export { CreateTableCommand, DynamoDBClient } from "@aws-sdk/client-dynamodb";
export { SendMessageCommand, SQSClient } from "@aws-sdk/client-sqs";
export { SchedulerClient } from "@aws-sdk/client-scheduler";
export { tool, wrapLanguageModel } from "ai";
export { expect } from "vitest";
export { z } from "zod";
export { orderFlow, Order, Approval } from "../../../functions/order-flow.ts";
export { reserveFlow } from "../../../functions/reserve-flow.ts";
export { Logger } from "@aws-lambda-powertools/logger";
export { refundAgent as refundFlow } from "../../../functions/refund-agent.ts";

// A workflow's context, as the workflow body gets it.
export declare const step: Step<{ approval: typeof Approval; refund_approval: typeof Approval }>;
export declare const saga: Saga;
export declare const order: Order & { delayMs: number; total: number; id: string };
export declare const input: Order;
export declare const runId: string;
export declare const processed: number;
export declare const cursor: string;
export declare const hold: { holdId: string };
export declare function charge(ctx: StepRunContext): Promise<{ id: string }>;
export declare const sku: string;
export declare const qty: number;
export declare const bigReport: { rows: string[] };
export const paymentFlow = durable({ name: "payment", input: Order }, async (order, step) => step.run("charge", () => order.amount));
export const report = durable({ name: "report", input: zod.object({}) }, async (_input, step) => step.run("render", () => "row\n".repeat(3)));
export const notify = durable({ name: "notify", input: Order }, async (order, step) => step.run("send", () => order.email));
export declare function pay(order: unknown, idempotencyKey: string): Promise<string>;

// Your services.
export declare const payments: {
  charge(...args: unknown[]): Promise<{ id: string; declined: boolean; code: string }>;
  refund(chargeId: string, amount: number, options: { idempotencyKey: string | undefined }): Promise<{ refundId: string }>;
};
export declare const mailer: { send(to: string, text?: string): Promise<void>; receipt(orderId: string, charge: unknown): Promise<void> };
export declare const inventory: { reserve(sku: string): Promise<{ id: string; holdId: string }>; release(hold: unknown): Promise<void> };
export declare const bank: { wire(order: unknown, idempotencyKey: string): Promise<{ wireId: string }>; lookup(reference: string): Promise<{ wireId: string } | undefined> };
export declare const s3: S3Client & { put(value: unknown): Promise<{ key: string }> };

// Hosts, ports and the parts of a Lambda invocation.
export declare const store: JournalStore;
export declare const wakes: WakeQueue;
export declare const ports: Pick<EngineOptions, "store" | "wakes" | "clock" | "workflows" | "owner">;
export declare const engine: import("waymark").Engine;
export declare const runtime: LocalRuntime;
export declare const rt: TestRuntime;
export declare const client: Dynamo & LocalRuntime["client"];
export declare const sqs: Sqs;
export declare const sqsClient: Sqs;
export declare const sqsWakes: SqsWakes;
export declare const schedulerClient: import("@aws-sdk/client-scheduler").SchedulerClient;
export declare const queueUrl: string;
export declare const QueueUrl: string;
export declare const queueArn: string;
export declare const roleArn: string;
export declare const deadLetterArn: string;
export declare const groupName: string;
export declare const record: SqsRecord;
export declare const wake: Wake;
export declare const end: ChildEnd;
export declare const parent: { replyTo: string };
export declare const config: AwsRuntimeConfig;
export declare const log: WaymarkLogger;
export declare function reportBatchItemFailure(record: SqsRecord): void;
export declare const tracing: ReturnType<typeof createTracing>;
export declare const req: HttpRequest;
export declare const secret: string;
export declare const token: string;
export declare const base: string;
export declare const bytes: Uint8Array;
export declare const payload: unknown;
export declare const runCreatedAt: number;
export declare const issuedAt: number;
export declare const res: Response;
export declare function respond(status: number): HttpResponse;
export declare function gone(): HttpResponse;
export declare function notFound(): HttpResponse;
export declare function unauthorized(reason: string): HttpResponse;

// A CDK app's parts.
export declare const stack: CdkStack;
export declare const scope: Construct;
export declare const fn: lambda.IFunction;
export declare const role: iam.IRole;
export declare const opsRole: iam.IRole;
export declare const grants: iam.IGrantable;
export declare const table: aws_dynamodb.ITable;
export declare const topic: sns.ITopic;
export declare const queue: sqs_.IQueue;
export declare const deadLetterQueue: sqs_.IQueue;
export declare const group: DurableEngine;
export declare const entry: string;

// An agent's parts (waymark/ai).
export declare const Ticket: zod.ZodObject<{ message: zod.ZodString }>;
export declare const lookupOrder: Tool;
export declare const issueRefund: Tool;
export declare const refund: Tool;
export declare const tools: Record<string, Tool>;
export declare const guardrails: LanguageModelV3Middleware;
export declare function openai(modelId: string): LanguageModelV3;
export declare function body(ticket: { message: string }, step: Step): Promise<{ answer: string }>;
