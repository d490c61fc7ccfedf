/**
 * A "Lambda" in a child process, for the SIGKILL test: one warm container of the real handler,
 * fed by the event source loop, until it is killed. Configured by one environment variable,
 * `WAYMARK_E2E_CHILD`, holding a {@link ChildSpec} as JSON. Prints `ready` once polling.
 *
 * Run as `node --conditions=waymark-source --import tsx test/aws-e2e/lambda-child.ts`.
 */
import { createLambdaHandler } from "../../lib/aws/lambda.ts";
import type { AwsRuntimeConfig } from "../../lib/aws/config.ts";
import { EventSourceMapping } from "./event-source.ts";
import { type Endpoints, type WakeQueues, HarnessClock, e2eClients } from "./harness.ts";
import { SchedulerStandIn } from "./scheduler-stand-in.ts";
import { StepLedger } from "./step-ledger.ts";
import { e2eWorkflows } from "./workflows.ts";

export interface ChildSpec {
  endpoints: Endpoints;
  queues: WakeQueues;
  config: AwsRuntimeConfig;
  ledgerFile: string;
  clockOffset: number;
  /** The function timeout its invocations count down from (the event source's default otherwise). */
  functionTimeoutMs?: number;
}

const raw = process.env.WAYMARK_E2E_CHILD;
if (!raw) throw new Error("WAYMARK_E2E_CHILD is not set");
const spec = JSON.parse(raw) as ChildSpec;
const clients = e2eClients(spec.endpoints);
const clock = new HarnessClock();
clock.offset = spec.clockOffset;
const scheduler = new SchedulerStandIn({ clock, sqs: clients.sqs, groupName: spec.config.scheduleGroup, queueArn: spec.queues.queueArn, queueUrl: spec.queues.queueUrl });
const handler = createLambdaHandler({
  workflows: e2eWorkflows(new StepLedger(spec.ledgerFile)).all,
  config: spec.config,
  clients: { ...clients, scheduler: scheduler.asClient() },
  clock,
  log: () => {},
});
const loop = new EventSourceMapping({
  sqs: clients.sqs,
  queueUrl: spec.queues.queueUrl,
  queueArn: spec.queues.queueArn,
  handler,
  beforePoll: () => scheduler.fireDue(),
  ...(spec.functionTimeoutMs === undefined ? {} : { functionTimeoutMs: spec.functionTimeoutMs }),
});
console.log("ready");
// Runs until killed (the test's SIGKILL); the deadline only bounds an orphan.
await loop.runUntil(() => false, { deadlineMs: 120_000, what: "a SIGKILL" }).catch(() => process.exit(1));
