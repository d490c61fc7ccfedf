/**
 * A tool set whose calls are journaled steps (`tool.<name>`, `tool.<name>#2`, …): each runs once
 * per run with its own retries, timeout and idempotency key, and a risky one waits for a human.
 */
import type { ToolSet } from "ai";
import type { SignalMap, Step, StepRunOptions } from "../core/definition.ts";
import { WorkflowDefinitionError } from "../core/errors.ts";
import { type ApprovalConfig, awaitApproval, type ToolApprovalOptions, type ToolApproved } from "./approval.ts";

/** How one tool's calls run. */
export interface DurableToolOptions<S extends SignalMap = SignalMap> extends Pick<StepRunOptions, "retries" | "timeout" | "semantics"> {
  /**
   * How a call is approved. A tool that sets the AI SDK's own `needsApproval` is approved this
   * way when `needsApproval` says so; a tool without it is approved this way on every call.
   */
  approval?: ToolApprovalOptions<S>;
}

/** Options of `durableTools`: the options every tool gets, and per-tool ones over them. */
export interface DurableToolsOptions<T extends ToolSet, S extends SignalMap = SignalMap> extends DurableToolOptions<S> {
  /** Per-tool options, over the ones above. (The `approval` above applies only to tools with `needsApproval`.) */
  tools?: { [K in keyof T]?: DurableToolOptions<S> };
}

/** What a durable tool call knows beyond the AI SDK's options: read it with {@link toolContext}. */
export interface DurableToolContext {
  /** `<runId>/<stepId>`: the same on every attempt and replay of this call. Pass it to the provider. */
  idempotencyKey: string;
  /** 1 for the first attempt. */
  attempt: number;
  /** The approval this call was granted, when it needed one. */
  approval?: ToolApproved;
}

/**
 * What the AI SDK passes a tool's `execute` besides its input, as far as Waymark reads it: ai 6's
 * and ai 7's `ToolExecutionOptions` both fit (ai 7's takes a type argument, and names
 * `experimental_context` `context`).
 */
export interface ToolCallOptions {
  toolCallId: string;
  messages: readonly unknown[];
  abortSignal?: AbortSignal;
}

const CONTEXT = "waymark";

/**
 * The durable context of a tool call (idempotency key, attempt, approval), or `undefined` when
 * the tool was called outside {@link durableTools}.
 *
 * @example
 * ```ts
 * const issueRefund = tool({
 *   inputSchema: z.object({ chargeId: z.string(), amount: z.number() }),
 *   execute: ({ chargeId, amount }, options) =>
 *     payments.refund(chargeId, amount, { idempotencyKey: toolContext(options)?.idempotencyKey }),
 * });
 * ```
 */
export function toolContext(options: ToolCallOptions): DurableToolContext | undefined {
  return (options as ToolCallOptions & { [CONTEXT]?: DurableToolContext })[CONTEXT];
}

/**
 * Makes a tool set durable inside a workflow: each call of a tool with `execute` runs as the
 * step `tool.<name>` (`#n` for later calls), so a replay returns the recorded result instead of
 * calling the tool again. The tool's `execute` receives the step's `AbortSignal` (its timeout,
 * joined with the SDK's own) and, through {@link toolContext}, the idempotency key.
 *
 * A call that needs approval suspends the run on the wait `approval.signal` (no compute held)
 * and sends the link through `approval.notify`; approved, the tool runs; declined or timed out,
 * the model gets a {@link ToolNotApproved} result and the agent goes on. The AI SDK's own
 * `needsApproval` is honoured here, inside the run, instead of ending `generateText`.
 *
 * @example
 * ```ts
 * const tools = durableTools(step, { lookupOrder, issueRefund: tool({ ...refund, needsApproval: true }) }, {
 *   approval: { signal: "refund_approval", timeout: "48h", notify: (link) => mailer.send("ana@shop", link.url) },
 *   tools: { issueRefund: { retries: 5, timeout: "30s" } },
 * });
 * ```
 */
export function durableTools<T extends ToolSet, S extends SignalMap, I>(step: Step<S, I>, tools: T, options: DurableToolsOptions<T, S> = {}): T {
  const { tools: perTool, ...shared } = options;
  const wrapped: Record<string, T[keyof T]> = {};
  for (const [name, tool] of Object.entries(tools) as Array<[string, T[keyof T]]>) {
    const own = perTool?.[name as keyof T];
    const merged = { ...shared, ...own } as Omit<DurableToolOptions, "approval"> & { approval?: ApprovalConfig };
    wrapped[name] = durableTool(step as unknown as Step, name, tool, merged, own?.approval !== undefined);
  }
  return wrapped as unknown as T;
}

function durableTool<X extends ToolSet[string]>(step: Step, name: string, tool: X, options: Omit<DurableToolOptions, "approval"> & { approval?: ApprovalConfig }, alwaysApprove: boolean): X {
  const execute = tool.execute;
  if (execute === undefined) return tool; // executed by the caller or the provider: nothing to journal
  const { needsApproval, ...rest } = tool;
  if (options.approval === undefined && (alwaysApprove || (needsApproval !== undefined && needsApproval !== false))) {
    throw new WorkflowDefinitionError(`tool "${name}" needs approval: give durableTools an \`approval\` option (the signal that carries the decision)`);
  }
  const stepName = `tool.${name}`;
  const runOptions: StepRunOptions = {
    ...(options.retries === undefined ? {} : { retries: options.retries }),
    ...(options.timeout === undefined ? {} : { timeout: options.timeout }),
    ...(options.semantics === undefined ? {} : { semantics: options.semantics }),
  };

  const needs = async (input: unknown, call: ExecuteOptions): Promise<boolean> => {
    if (needsApproval === undefined) return alwaysApprove;
    if (typeof needsApproval === "boolean") return needsApproval;
    // A function may read anything: its answer is journaled so every replay takes the same path.
    const { toolCallId, messages, experimental_context, context } = call;
    const asked = { toolCallId, messages, experimental_context, ...(context === undefined ? {} : { context }) };
    return step.run(`${stepName}.needs-approval`, async () => Boolean(await needsApproval(input, asked)));
  };

  const durableExecute = async (input: unknown, call: ExecuteOptions): Promise<unknown> => {
    let approval: ToolApproved | undefined;
    if (await needs(input, call)) {
      const decision = await awaitApproval(step, options.approval as ApprovalConfig, { toolName: name, toolCallId: call.toolCallId, input });
      if (!decision.approved) return decision;
      approval = decision;
    }
    return step.run(
      stepName,
      async ({ idempotencyKey, attempt, signal }) => {
        const abortSignal = call.abortSignal === undefined ? signal : AbortSignal.any([call.abortSignal, signal]);
        const context: DurableToolContext = approval === undefined ? { idempotencyKey, attempt } : { idempotencyKey, attempt, approval };
        return lastOf(await execute(input, { ...call, abortSignal, [CONTEXT]: context } as ExecuteOptions));
      },
      runOptions,
    );
  };
  return { ...rest, execute: durableExecute } as unknown as X;
}

/** The execute options of the `ai` this was built against, with ai 7's name for the context. */
type ExecuteOptions = Parameters<NonNullable<ToolSet[string]["execute"]>>[1] & { context?: unknown };

/** A streaming tool (an async iterable of preliminary results) is journaled by its final result. */
async function lastOf(output: unknown): Promise<unknown> {
  if (output === null || typeof output !== "object" || !(Symbol.asyncIterator in output)) return output;
  let last: unknown;
  for await (const value of output as AsyncIterable<unknown>) last = value;
  return last;
}
