/**
 * Human approval of a tool call: a durable wait on one of the workflow's signals, its link handed
 * out through `notify`, and the decision turned into either "run the tool" or a tool result that
 * tells the model it was not allowed.
 */
import type { ApprovalLink, SignalMap, SignalSender, Step, WaitResult } from "../core/definition.ts";
import type { Duration } from "../core/duration.ts";
import type { StandardSchemaV1 } from "../core/standard-schema.ts";

/** What an approval signal's payload must at least say. */
export interface ApprovalDecision {
  approved: boolean;
  /** Who decided, as the approver wrote it (a link minted per approver proves it: see `sender`). */
  approver?: string;
  /** Why, shown to the model when the call is declined. */
  note?: string;
}

/** The names of a workflow's signals whose payload is an {@link ApprovalDecision}. */
export type ApprovalSignal<S extends SignalMap> = {
  [K in keyof S & string]: StandardSchemaV1.InferOutput<S[K]> extends ApprovalDecision ? K : never;
}[keyof S & string];

/** The tool call an approver is asked about. */
export interface ToolApprovalRequest {
  toolName: string;
  toolCallId: string;
  /** The model's arguments, already checked against the tool's input schema. */
  input: unknown;
}

/** How a tool call is approved. */
export interface ToolApprovalOptions<S extends SignalMap = SignalMap> {
  /** The workflow's signal that carries the decision (declare it in `durable({ signals })`, e.g. with {@link toolApproval}). */
  signal: ApprovalSignal<S>;
  /** No decision by then: the call is declined. Default: no limit (links still expire after 7 days). */
  timeout?: Duration;
  /** One link per named approver (see `waitForSignal`'s `approvers`). */
  approvers?: readonly string[];
  /**
   * Sends the approval link (by mail, chat, …): runs once per wait as a journaled step, like
   * `waitForSignal`'s `notify`. Needs the runtime's webhook secret.
   */
  notify?: (link: ApprovalLink, request: ToolApprovalRequest) => Promise<unknown> | unknown;
}

/** {@link ToolApprovalOptions} of any workflow, as the wrapper handles it inside. */
export type ApprovalConfig = Omit<ToolApprovalOptions, "signal"> & { signal: string };

/** The tool result the model receives when a call was declined or nobody decided in time. */
export interface ToolNotApproved {
  approved: false;
  toolName: string;
  reason: string;
}

/** A granted approval, as the tool sees it (`toolContext(options).approval`). */
export interface ToolApproved extends ApprovalDecision {
  approved: true;
  signalId: string;
  sender?: SignalSender;
}

/**
 * A ready-made schema for approval signals: `{ approved: boolean, approver?: string, note?: string }`.
 * Any Standard Schema whose output has `approved: boolean` works as well.
 *
 * @example
 * ```ts
 * export const agent = durable({ name: "agent", input: Ticket, signals: { refund_approval: toolApproval } }, body);
 * ```
 */
export const toolApproval: StandardSchemaV1<unknown, ApprovalDecision> = {
  "~standard": {
    version: 1,
    vendor: "waymark",
    validate(value) {
      if (typeof value !== "object" || value === null || Array.isArray(value)) return { issues: [{ message: "expected an object" }] };
      const { approved, approver, note } = value as Record<string, unknown>;
      const issues: StandardSchemaV1.Issue[] = [];
      if (typeof approved !== "boolean") issues.push({ message: "expected a boolean", path: ["approved"] });
      if (approver !== undefined && (typeof approver !== "string" || approver.length === 0 || approver.length > 256)) issues.push({ message: "expected 1-256 characters", path: ["approver"] });
      if (note !== undefined && (typeof note !== "string" || note.length > 1000)) issues.push({ message: "expected at most 1000 characters", path: ["note"] });
      if (issues.length > 0) return { issues };
      const decision: ApprovalDecision = { approved: approved as boolean };
      if (typeof approver === "string") decision.approver = approver;
      if (typeof note === "string") decision.note = note;
      return { value: decision };
    },
  },
};

/** Waits (durably) for the decision on one tool call. */
export async function awaitApproval(step: Step, options: ApprovalConfig, request: ToolApprovalRequest): Promise<ToolApproved | ToolNotApproved> {
  const notify = options.notify;
  const result = (await step.waitForSignal(options.signal, {
    ...(options.timeout === undefined ? {} : { timeout: options.timeout }),
    ...(options.approvers === undefined ? {} : { approvers: options.approvers }),
    ...(notify === undefined ? {} : { notify: (link: ApprovalLink) => notify(link, request) }),
  })) as WaitResult<ApprovalDecision>;
  if (!result.received) {
    const within = options.timeout === undefined ? "" : ` within ${typeof options.timeout === "number" ? `${options.timeout} ms` : options.timeout}`;
    return { approved: false, toolName: request.toolName, reason: `nobody approved this call${within}; it was not run` };
  }
  const { payload, signalId, sender } = result;
  const who = sender?.id ?? payload.approver;
  if (!payload.approved) {
    return { approved: false, toolName: request.toolName, reason: `${who ?? "the approver"} declined it${payload.note ? ` (${payload.note})` : ""}; it was not run` };
  }
  const approved: ToolApproved = { approved: true, signalId };
  if (who !== undefined) approved.approver = who;
  if (payload.note !== undefined) approved.note = payload.note;
  if (sender !== undefined) approved.sender = sender;
  return approved;
}
