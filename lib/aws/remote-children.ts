/**
 * Children hosted by another Waymark function (another `DurableFunction`), on AWS:
 *
 *   start / cancel   a synchronous Lambda invocation of the child's function (its direct start,
 *                    `{ waymark: "child-start" | "child-cancel" }`, lib/aws/child-entry.ts);
 *                    `lambda:InvokeFunction` on that function is the parent's grant
 *   the child's end  a message on the parent's own wake queue (`replyTo`, recorded in the
 *                    child's journal), which the parent's function records as the signal of the
 *                    parent's wait (lib/aws/child-message.ts); `sqs:SendMessage` on that queue is
 *                    the child's grant
 *
 * `child.grantInvoke(parent)` in the construct gives both grants and lists the child's function
 * in the parent's `WAYMARK_CHILD_FUNCTIONS`. Which function hosts a workflow is learnt by asking
 * them in order (a function that does not host it answers `hosted: false`, writing nothing), and
 * remembered for the container's life.
 */
import type { LambdaClient } from "@aws-sdk/client-lambda";
import type { SQSClient } from "@aws-sdk/client-sqs";
import type { ChildCancel, ChildEnd, ChildStart, RemoteChildren } from "../core/children.ts";
import { InvalidInputError, NonRetryableError, RunConflictError } from "../core/errors.ts";
import { CHILD_CANCEL, CHILD_START, type ChildAnswer } from "./child-entry.ts";
import { formatChildEndMessage } from "./child-message.ts";
import { ChildInvokeError } from "./errors.ts";
import { lambdaSdk, sqsSdk } from "./sdk.ts";

/**
 * Options of `LambdaChildren`: the functions hosting children and this function's own wake queue.
 */
export interface LambdaChildrenOptions {
  /** The functions (names or ARNs) hosting the children this function starts (`WAYMARK_CHILD_FUNCTIONS`). */
  functions: readonly string[];
  /** This function's own wake queue, where its children send their ends. */
  replyTo: string;
  /** Default: created (and the SDK loaded) on the first child started in another function. */
  lambda?: LambdaClient;
  /** Default: created on the first end sent to a parent in another function. */
  sqs?: SQSClient;
}

/**
 * {@link RemoteChildren} over Lambda invocations and SQS. The AWS runtime builds one from its
 * configuration; build your own only to host workflows outside the construct.
 *
 * @example
 * ```ts
 * const remote = new LambdaChildren({ functions: ["payments-fn"], replyTo: process.env.WAYMARK_QUEUE_URL! });
 * await remote.start({ workflow: "payment", runId: "order-1:pay", input: { cents: 1200 } });
 * ```
 */
export class LambdaChildren implements RemoteChildren {
  private lambda: LambdaClient | undefined;
  private sqs: SQSClient | undefined;
  private readonly functions: readonly string[];
  private readonly replyTo: string;
  /** Workflow key → the function that hosts it, as learnt. */
  private readonly routes = new Map<string, string>();

  constructor(o: LambdaChildrenOptions) {
    this.functions = o.functions;
    this.replyTo = o.replyTo;
    this.lambda = o.lambda;
    this.sqs = o.sqs;
  }

  async start(request: ChildStart): Promise<void> {
    const { workflow, runId, input, parent } = request;
    const event = {
      waymark: CHILD_START,
      v: 1,
      workflow,
      runId,
      input,
      ...(parent ? { parent: { runId: parent.runId, waitId: parent.waitId, ...(parent.incarnation === undefined ? {} : { incarnation: parent.incarnation }), replyTo: this.replyTo } } : {}),
    };
    for (const fn of this.candidates(workflow)) {
      const answer = await this.invoke(fn, event);
      if (answer.ok) {
        this.routes.set(workflow, fn);
        return;
      }
      if ("hosted" in answer) continue;
      throw rebuild(answer.error, runId);
    }
    // Every function this one may start answered: none hosts it. Retrying cannot change that
    // before a deploy does, and a deploy is not a retry.
    throw new NonRetryableError(`no function this one may start hosts workflow "${workflow}" (asked ${this.functions.length}: WAYMARK_CHILD_FUNCTIONS, set by grantInvoke)`, { workflow });
  }

  async cancel(request: ChildCancel): Promise<void> {
    const { workflow, runId, reason, parent } = request;
    const event = { waymark: CHILD_CANCEL, v: 1, runId, reason, parent: { runId: parent.runId, waitId: parent.waitId, ...(parent.incarnation === undefined ? {} : { incarnation: parent.incarnation }), replyTo: this.replyTo } };
    for (const fn of this.candidates(workflow)) {
      const answer = await this.invoke(fn, event);
      if (answer.ok) return;
      if ("hosted" in answer) continue;
      throw rebuild(answer.error, runId);
    }
  }

  async notify(end: ChildEnd): Promise<void> {
    const queueUrl = end.parent.replyTo;
    if (!queueUrl) throw new Error(`child ${end.childRunId}: its parent has no reply queue`);
    const { SQSClient, SendMessageCommand } = await sqsSdk();
    this.sqs ??= new SQSClient({});
    await this.sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: formatChildEndMessage(end) }));
  }

  /** The function known to host `workflow` first, then the others. */
  private candidates(workflow: string): string[] {
    const known = this.routes.get(workflow);
    return known === undefined ? [...this.functions] : [known, ...this.functions.filter((f) => f !== known)];
  }

  private async invoke(functionName: string, event: object): Promise<ChildAnswer> {
    const { LambdaClient, InvokeCommand } = await lambdaSdk();
    this.lambda ??= new LambdaClient({});
    const out = await this.lambda.send(new InvokeCommand({ FunctionName: functionName, InvocationType: "RequestResponse", Payload: new TextEncoder().encode(JSON.stringify(event)) }));
    const text = out.Payload ? new TextDecoder().decode(out.Payload) : "";
    if (out.FunctionError) throw new ChildInvokeError(functionName, `${out.FunctionError}: ${text.slice(0, 500)}`);
    let answer: unknown;
    try {
      answer = JSON.parse(text);
    } catch {
      throw new ChildInvokeError(functionName, `the answer is not JSON: ${JSON.stringify(text.slice(0, 80))}`);
    }
    if (typeof answer !== "object" || answer === null || typeof (answer as { ok?: unknown }).ok !== "boolean") {
      throw new ChildInvokeError(functionName, `not a Waymark function (answered ${text.slice(0, 80)})`);
    }
    return answer as ChildAnswer;
  }
}

/** The child side's non-retryable error, as its own class where Waymark has one. */
function rebuild(error: { name: string; message: string; fields?: Record<string, unknown>; issues?: ReadonlyArray<{ path: string; message: string }> }, runId: string): Error {
  if (error.name === "InvalidInputError") return new InvalidInputError(error.message, error.issues ?? []);
  if (error.name === "RunConflictError") return new RunConflictError(runId);
  return new NonRetryableError(`${error.name}: ${error.message}`, error.fields ?? {});
}
