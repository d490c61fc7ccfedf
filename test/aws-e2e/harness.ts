/**
 * The end-to-end harness of the AWS runtime: real peers, the real handler.
 *
 *   DynamoDB Local  a fresh journal table per harness (the CDK's own table definition)
 *   SQS emulator    a standard wake queue with a short visibility timeout and a redrive policy
 *                   to its DLQ, like the construct's (only shorter, for redelivery tests)
 *   Scheduler       NO LOCAL PEER: `SchedulerStandIn` (see its header for what it checks)
 *   Lambda          `createLambdaHandler(...)` with a config object built as the environment
 *                   would give it, fed by `EventSourceMapping` (Lambda's SQS poller)
 *
 * Time: one harness clock, `Date.now() + offset`, shared by the runtime and the Scheduler
 * stand-in, so a test can jump past a 20-minute sleep (`advance`). SQS delays stay real, so
 * sleeps of 15 minutes or less use real, short durations.
 *
 * Nothing here imports vitest: the child "Lambda" process and the benchmark use it too.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { LambdaClient } from "@aws-sdk/client-lambda";
import { CreateQueueCommand, GetQueueAttributesCommand, ReceiveMessageCommand, SQSClient, type Message } from "@aws-sdk/client-sqs";
import { JOURNAL_CLIENT_CONFIG } from "../../lib/aws/dynamodb-client.ts";
import { DynamoJournalStore } from "../../lib/aws/dynamodb-store.ts";
import type { AwsRuntimeConfig } from "../../lib/aws/config.ts";
import { createLambdaHandler, type LambdaHandler } from "../../lib/aws/lambda.ts";
import type { AwsRuntimeOptions } from "../../lib/aws/runtime.ts";
import { SchedulerWakes } from "../../lib/aws/scheduler-wakes.ts";
import { SqsWakes } from "../../lib/aws/sqs-wakes.ts";
import { AwsWakeQueue } from "../../lib/aws/wakes.ts";
import { Client } from "../../lib/client.ts";
import type { AnyWorkflow } from "../../lib/core/definition.ts";
import type { LogEntry } from "../../lib/core/engine.ts";
import { createRegistry } from "../../lib/core/registry.ts";
import { type Clock, type RunMeta, TERMINAL_STATUSES } from "../../lib/ports.ts";
import { createJournalTable } from "../setup/tables.ts";
import { LOCAL_CREDENTIALS, LOCAL_REGION } from "../setup/local-aws.ts";
import { EventSourceMapping, type EventSourceOptions } from "./event-source.ts";
import { SchedulerStandIn } from "./scheduler-stand-in.ts";
import { StepLedger } from "./step-ledger.ts";

export interface Endpoints {
  dynamodb: string;
  sqs: string;
}

export type LogLine = LogEntry & { level: "info" | "warn" | "error" };

/** `Date.now()` plus an offset a test can move forward. */
export class HarnessClock implements Clock {
  offset = 0;
  now(): number {
    return Date.now() + this.offset;
  }
}

export interface WakeQueues {
  queueUrl: string;
  queueArn: string;
  dlqUrl: string;
  dlqArn: string;
}

/** A standard wake queue and its DLQ, with a redrive policy, in the SQS emulator. */
export async function createWakeQueues(sqs: SQSClient, name: string, o: { visibilityTimeoutS: number; maxReceiveCount: number }): Promise<WakeQueues> {
  const dlq = await sqs.send(new CreateQueueCommand({ QueueName: `${name}-dlq` }));
  const dlqUrl = dlq.QueueUrl ?? "";
  const dlqArn = await queueArn(sqs, dlqUrl);
  const queue = await sqs.send(
    new CreateQueueCommand({
      QueueName: name,
      Attributes: {
        VisibilityTimeout: String(o.visibilityTimeoutS),
        MaximumMessageSize: String(1024 * 1024),
        RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount: o.maxReceiveCount }),
      },
    }),
  );
  const queueUrl = queue.QueueUrl ?? "";
  return { queueUrl, queueArn: await queueArn(sqs, queueUrl), dlqUrl, dlqArn };
}

async function queueArn(sqs: SQSClient, url: string): Promise<string> {
  const out = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ["QueueArn"] }));
  const arn = out.Attributes?.QueueArn;
  if (!arn) throw new Error(`no ARN for queue ${url}`);
  return arn;
}

/** The configuration the CDK construct's environment would give the function. */
export function e2eConfig(tableName: string, q: WakeQueues, overrides: Partial<AwsRuntimeConfig> = {}): AwsRuntimeConfig {
  return {
    tableName,
    queueUrl: q.queueUrl,
    queueArn: q.queueArn,
    scheduleGroup: "waymark-e2e",
    schedulerRoleArn: "arn:aws:iam::123456789012:role/waymark-scheduler",
    schedulerDeadLetterArn: q.dlqArn,
    retentionDays: 30,
    checkpointMarginMs: 10_000,
    leaseTtlMs: 10_000,
    maxInvocations: 10_000,
    ...overrides,
  };
}

export function e2eClients(endpoints: Endpoints): { dynamodb: DynamoDBClient; sqs: SQSClient } {
  const local = { region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS };
  // The journal's own retry settings, as the runtime creates its client in production.
  return { dynamodb: new DynamoDBClient({ ...JOURNAL_CLIENT_CONFIG, endpoint: endpoints.dynamodb, ...local }), sqs: new SQSClient({ endpoint: endpoints.sqs, ...local }) };
}

export interface E2eOptions {
  endpoints: Endpoints;
  workflows: (ledger: StepLedger) => readonly AnyWorkflow[];
  visibilityTimeoutS?: number;
  maxReceiveCount?: number;
  config?: Partial<AwsRuntimeConfig>;
}

export class E2e {
  readonly clock = new HarnessClock();
  readonly dir = mkdtempSync(join(tmpdir(), "waymark-e2e-"));
  readonly ledger = new StepLedger(join(this.dir, "steps.jsonl"));
  readonly logs: LogLine[] = [];
  /** Every message sent to the wake queue (by the runtime, the stand-in or the loop), in order. */
  readonly sent: Array<{ body: string; delaySeconds: number }> = [];
  readonly workflows: readonly AnyWorkflow[];
  readonly scheduler: SchedulerStandIn;
  readonly store: DynamoJournalStore;
  /** The caller's side (signals, reads), over the same table and queue. */
  readonly client: Client;
  /** The handler, as one warm Lambda container. */
  readonly handler: LambdaHandler;

  constructor(
    readonly clients: { dynamodb: DynamoDBClient; sqs: SQSClient },
    readonly tableName: string,
    readonly queues: WakeQueues,
    readonly config: AwsRuntimeConfig,
    workflows: E2eOptions["workflows"],
  ) {
    this.workflows = workflows(this.ledger);
    clients.sqs.middlewareStack.add(
      (next) => async (args) => {
        const input = args.input as { QueueUrl?: string; MessageBody?: string; DelaySeconds?: number };
        if (input.MessageBody !== undefined && input.QueueUrl === queues.queueUrl) this.sent.push({ body: input.MessageBody, delaySeconds: input.DelaySeconds ?? 0 });
        return next(args);
      },
      { step: "initialize", name: "recordSentWakes" },
    );
    this.scheduler = new SchedulerStandIn({ clock: this.clock, sqs: clients.sqs, groupName: config.scheduleGroup, queueArn: queues.queueArn, queueUrl: queues.queueUrl });
    this.store = new DynamoJournalStore({ client: clients.dynamodb, tableName });
    const sqsWakes = new SqsWakes({ client: clients.sqs, queueUrl: queues.queueUrl });
    const schedulerWakes = new SchedulerWakes({ client: this.scheduler.asClient(), groupName: config.scheduleGroup, queueArn: queues.queueArn, roleArn: config.schedulerRoleArn, deadLetterArn: config.schedulerDeadLetterArn });
    const wakes = new AwsWakeQueue({ sqs: sqsWakes, scheduler: schedulerWakes, clock: this.clock });
    this.client = new Client({ store: this.store, wakes, clock: this.clock, workflows: createRegistry(this.workflows) });
    this.handler = this.newHandler();
  }

  /** Another Lambda container: its own runtime (the harness's clients unless given others). */
  newHandler(config: Partial<AwsRuntimeConfig> = {}, clients: { sqs?: SQSClient; lambda?: LambdaClient } = {}, observe: Pick<AwsRuntimeOptions, "logger" | "metrics" | "tracing"> = { metrics: false }): LambdaHandler {
    return createLambdaHandler({
      workflows: this.workflows,
      config: { ...this.config, ...config },
      clients: { dynamodb: this.clients.dynamodb, sqs: clients.sqs ?? this.clients.sqs, scheduler: this.scheduler.asClient(), ...(clients.lambda ? { lambda: clients.lambda } : {}) },
      clock: this.clock,
      log: (entry) => this.logs.push(entry),
      ...observe,
    });
  }

  /** An event source mapping on the wake queue; it fires due schedules before every poll. */
  mapping(options: Partial<EventSourceOptions> = {}): EventSourceMapping {
    return new EventSourceMapping({
      sqs: this.clients.sqs,
      queueUrl: this.queues.queueUrl,
      queueArn: this.queues.queueArn,
      handler: this.handler,
      beforePoll: () => this.scheduler.fireDue(),
      ...options,
    });
  }

  /** Moves the clock forward and lets the Scheduler stand-in fire what became due. */
  async advance(ms: number): Promise<void> {
    this.clock.offset += ms;
    await this.scheduler.fireDue();
  }

  async run(runId: string): Promise<RunMeta> {
    const run = await this.store.getRun(runId);
    if (!run) throw new Error(`no run ${runId}`);
    return run;
  }

  /** A `runUntil` condition: every one of these runs has finished (any terminal status). */
  finished(runIds: readonly string[]): () => Promise<boolean> {
    return async () => (await Promise.all(runIds.map((id) => this.store.getRun(id)))).every((r) => r !== undefined && TERMINAL_STATUSES.has(r.status));
  }

  /** Short-polls a queue of this harness once (receives hide the messages for the visibility timeout). */
  async receive(which: "queue" | "dlq", max = 10): Promise<Message[]> {
    const url = which === "queue" ? this.queues.queueUrl : this.queues.dlqUrl;
    const out = await this.clients.sqs.send(new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: max, WaitTimeSeconds: 0, AttributeNames: ["All"] }));
    return out.Messages ?? [];
  }

  /** Log lines of one event kind, optionally of one run. */
  lines(event: string, runId?: string): LogLine[] {
    return this.logs.filter((l) => l.event === event && (runId === undefined || l.runId === runId));
  }

  close(): void {
    this.clients.dynamodb.destroy();
    this.clients.sqs.destroy();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

let counter = 0;

/** A fresh table and queue pair, and the handler over them. */
export async function createE2e(o: E2eOptions): Promise<E2e> {
  const clients = e2eClients(o.endpoints);
  const name = `e2e-${process.pid}-${Date.now().toString(36)}-${++counter}`;
  const [tableName, queues] = await Promise.all([
    createJournalTable(clients.dynamodb, "e2e"),
    createWakeQueues(clients.sqs, name, { visibilityTimeoutS: o.visibilityTimeoutS ?? 2, maxReceiveCount: o.maxReceiveCount ?? 3 }),
  ]);
  return new E2e(clients, tableName, queues, e2eConfig(tableName, queues, o.config), o.workflows);
}
