/**
 * A "Lambda" in a child process for the step.transact SIGKILL test: the real handler behind the
 * event source loop, with `tx-flow`, until it is killed. Configured by `WAYMARK_TX_CHILD` (a
 * {@link TxChildSpec} as JSON). Run as `node --conditions=waymark-source --import tsx …`.
 */
import { createLambdaHandler } from "../../lib/aws/lambda.ts";
import type { AwsRuntimeConfig } from "../../lib/aws/config.ts";
import { EventSourceMapping } from "../aws-e2e/event-source.ts";
import { type Endpoints, type WakeQueues, HarnessClock, e2eClients } from "../aws-e2e/harness.ts";
import { SchedulerStandIn } from "../aws-e2e/scheduler-stand-in.ts";
import { StepLedger } from "../aws-e2e/step-ledger.ts";
import { awsTransactFlows, type UserTables } from "./aws-flows.ts";

export interface TxChildSpec {
  endpoints: Endpoints;
  queues: WakeQueues;
  config: AwsRuntimeConfig;
  ledgerFile: string;
  clockOffset: number;
  tables: UserTables;
}

const raw = process.env.WAYMARK_TX_CHILD;
if (!raw) throw new Error("WAYMARK_TX_CHILD is not set");
const spec = JSON.parse(raw) as TxChildSpec;
const clients = e2eClients(spec.endpoints);
const clock = new HarnessClock();
clock.offset = spec.clockOffset;
const scheduler = new SchedulerStandIn({ clock, sqs: clients.sqs, groupName: spec.config.scheduleGroup, queueArn: spec.queues.queueArn, queueUrl: spec.queues.queueUrl });
const handler = createLambdaHandler({
  workflows: awsTransactFlows(new StepLedger(spec.ledgerFile), spec.tables),
  config: spec.config,
  clients: { ...clients, scheduler: scheduler.asClient() },
  clock,
  log: () => {},
});
const loop = new EventSourceMapping({ sqs: clients.sqs, queueUrl: spec.queues.queueUrl, queueArn: spec.queues.queueArn, handler, beforePoll: () => scheduler.fireDue() });
console.log("ready");
await loop.runUntil(() => false, { deadlineMs: 120_000, what: "a SIGKILL" }).catch(() => process.exit(1));
