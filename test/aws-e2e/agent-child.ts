/**
 * A "Lambda" in a child process hosting the AI SDK refund agent, for the agent's SIGKILL test:
 * the real handler behind the event source loop, whose agent kills the process (SIGKILL) the
 * moment the refund tool's body has returned — the payment made, its record not yet written.
 * Configured by `WAYMARK_E2E_CHILD` (a {@link ChildSpec}) and `WAYMARK_DEMO_DIR` (the fakes'
 * files, and `executions.jsonl` of step bodies, shared with the test process).
 *
 * Run as `node --conditions=waymark-source --import tsx test/aws-e2e/agent-child.ts`.
 */
import { createLambdaHandler } from "../../lib/aws/lambda.ts";
import { refundAgent } from "../../functions/refund-agent.ts";
import { ExecutionLog, instrument } from "../crash/instrument.ts";
import { EventSourceMapping } from "./event-source.ts";
import { HarnessClock, e2eClients } from "./harness.ts";
import type { ChildSpec } from "./lambda-child.ts";
import { SchedulerStandIn } from "./scheduler-stand-in.ts";

const raw = process.env.WAYMARK_E2E_CHILD;
const demo = process.env.WAYMARK_DEMO_DIR;
if (!raw || !demo) throw new Error("WAYMARK_E2E_CHILD and WAYMARK_DEMO_DIR must be set");
const spec = JSON.parse(raw) as ChildSpec;
const clients = e2eClients(spec.endpoints);
const clock = new HarnessClock();
clock.offset = spec.clockOffset;
const scheduler = new SchedulerStandIn({ clock, sqs: clients.sqs, groupName: spec.config.scheduleGroup, queueArn: spec.queues.queueArn, queueUrl: spec.queues.queueUrl });
const agent = instrument(refundAgent, {
  log: new ExecutionLog(demo),
  worker: "child",
  afterBody: (e) => (e.stepId === "tool.issue_refund" ? process.kill(process.pid, "SIGKILL") : undefined),
});
const handler = createLambdaHandler({ workflows: [agent], config: spec.config, clients: { ...clients, scheduler: scheduler.asClient() }, clock, log: () => {} });
const loop = new EventSourceMapping({ sqs: clients.sqs, queueUrl: spec.queues.queueUrl, queueArn: spec.queues.queueArn, handler, beforePoll: () => scheduler.fireDue() });
console.log("ready");
// Runs until it kills itself; the deadline only bounds an orphan.
await loop.runUntil(() => false, { deadlineMs: 120_000, what: "a SIGKILL" }).catch(() => process.exit(1));
