/**
 * The routes' actions, once the handler has matched, authenticated and parsed the request.
 * Each one is a single call into the client, which validates before it writes.
 */
import { decision } from "../core/run/signals.ts";
import * as z from "../core/shape.ts";
import type { Client, HistoryEntry } from "../client.ts";
import { RunFinishedError, SignalConflictError, UnknownWorkflowError, WaitNotFoundError, WaitResolvedError, type WaitDecision } from "../core/errors.ts";
import { zodIssues } from "../core/zod-issues.ts";
import type { SignalSender } from "../core/records.ts";
import { type ApprovalLinks, type LinkClaims, type RunMeta, TERMINAL_STATUSES } from "../ports.ts";
import { HttpError, json } from "./errors.ts";
import type { HttpResponse } from "./types.ts";

export interface RouteContext {
  client: Client;
  links: ApprovalLinks | undefined;
}

const StartBody = z.object({ workflow: z.string().min(1).max(128), runId: z.string(), input: z.unknown() }).strict();
const CancelBody = z.object({ reason: z.string().min(1).max(500).optional() }).strict();
const SignalBody = z
  .object({ payload: z.unknown(), signalId: z.string().optional(), waitId: z.string().max(300).optional() })
  .strict();

/** `POST /runs`: 201 when created, 200 when the same run already existed (idempotent start). */
export async function startRun(ctx: RouteContext, body: unknown): Promise<HttpResponse> {
  const { workflow, runId, input } = parse(StartBody, body, ["input"]);
  try {
    const { created, run } = await ctx.client.start(workflow, { runId, input });
    return json(created ? 201 : 200, { runId, workflow, created, status: run.status });
  } catch (err) {
    if (err instanceof UnknownWorkflowError) throw new HttpError(422, "InvalidRequestError", err.message, { issues: [{ path: "workflow", message: "no such workflow here" }] });
    throw err;
  }
}

/** `GET /runs/:runId`: status, result or error, and the waits still open. */
export async function getRun(ctx: RouteContext, runId: string): Promise<HttpResponse> {
  const { run, entries } = await ctx.client.history(runId);
  const terminal = TERMINAL_STATUSES.has(run.status);
  const waits = terminal ? [] : openWaits(entries).map((w) => {
    const out: Record<string, unknown> = { waitId: w.waitId, signal: w.signal };
    if (w.timeoutAt !== undefined) out.timeoutAt = w.timeoutAt;
    if (ctx.links) {
      const { token, url } = ctx.links.mint(claimsOf(run, w));
      out.approvalToken = token;
      if (url !== undefined) out.approvalUrl = url;
    }
    return out;
  });
  const body: Record<string, unknown> = { runId: run.runId, workflow: run.workflow, status: run.status, createdAt: run.createdAt, updatedAt: run.updatedAt };
  if (run.waitingFor !== undefined && !terminal) body.waitingFor = run.waitingFor;
  if (run.result !== undefined) body.result = run.result;
  if (run.error) body.error = { name: run.error.name, message: run.error.message };
  body.pendingWaits = waits;
  return json(200, body);
}

/**
 * `POST /runs/:runId/signals/:name`: 202 delivered or buffered. The signal's id is the body's
 * `signalId` (signed), else derived from the signed path and body.
 */
export async function deliverSignal(ctx: RouteContext, runId: string, name: string, body: unknown, headerId: string | undefined, fallbackId: string): Promise<HttpResponse> {
  const { payload, signalId: bodyId, waitId } = parse(SignalBody, body, ["payload"]);
  // The signature covers the body, not the headers: an Idempotency-Key alone could be changed
  // by anyone replaying a captured request, turning one signal into several. It may only repeat
  // the signed body's signalId.
  if (headerId !== undefined && bodyId === undefined) {
    throw new HttpError(400, "InvalidRequestError", "the Idempotency-Key header is not covered by the signature: put the id in the body's signalId", { issues: [{ path: "signalId", message: "required with Idempotency-Key" }] });
  }
  if (bodyId !== undefined && headerId !== undefined && bodyId !== headerId) {
    throw new HttpError(400, "InvalidRequestError", "signalId and the Idempotency-Key header differ", { issues: [{ path: "signalId", message: "must equal Idempotency-Key" }] });
  }
  const signalId = bodyId ?? fallbackId;
  try {
    const receipt = await ctx.client.signal(runId, name, payload, { signalId, ...(waitId === undefined ? {} : { waitId }) });
    return json(202, receipt);
  } catch (err) {
    if (err instanceof RunFinishedError) await explainFinished(ctx, runId, name, waitId);
    throw err;
  }
}

/**
 * `POST /runs/:runId/cancel`: 202 with what the cancel did — `outcome: "cancelled"` (the run had
 * not started and ended now) or `"requested"` (journaled: it ends after its compensations); 409
 * `RunFinishedError` with the run's status when it had already ended. Idempotent: asking again
 * keeps the first reason.
 */
export async function cancelRun(ctx: RouteContext, runId: string, body: unknown): Promise<HttpResponse> {
  const { reason } = parse(CancelBody, body, []);
  const answer = await ctx.client.cancel(runId, reason === undefined ? {} : { reason });
  if (answer.outcome === "already-ended") throw new RunFinishedError(runId, answer.status);
  return json(202, { runId, outcome: answer.outcome, status: answer.status, cancelling: answer.outcome === "requested" });
}

/** `GET /approvals/:token`: what the link approves and whether it is still open; writes nothing. */
export async function describeApproval(ctx: RouteContext, claims: LinkClaims): Promise<HttpResponse> {
  const { run, entries } = await ctx.client.history(claims.runId);
  assertSameRun(claims, run);
  const wait = waitsOf(entries).find((w) => w.waitId === claims.waitId && w.signal === claims.signal);
  if (!wait) throw new WaitNotFoundError(claims.runId, claims.waitId);
  const decision = decisionOf(entries, claims.waitId);
  const body: Record<string, unknown> = { runId: claims.runId, waitId: claims.waitId, signal: claims.signal, runStatus: run.status };
  if (claims.approver !== undefined) body.approver = claims.approver;
  if (claims.expiresAt !== undefined) body.expiresAt = claims.expiresAt;
  body.open = decision === undefined && !TERMINAL_STATUSES.has(run.status);
  if (decision) body.decision = decision;
  return json(200, body);
}

/**
 * `POST /approvals/:token`: delivers the body as the signal's payload to exactly the token's
 * wait, recorded as sent by the token's approver (verified) or by the `approver` the body names
 * (claimed).
 */
export async function approve(ctx: RouteContext, claims: LinkClaims, signalId: string, payload: unknown): Promise<HttpResponse> {
  assertSameRun(claims, await ctx.client.get(claims.runId));
  const sender = senderOf(claims, payload);
  try {
    const receipt = await ctx.client.signal(claims.runId, claims.signal, payload, { waitId: claims.waitId, waitRecordedAt: claims.issuedAt, signalId, ...(sender ? { sender } : {}) });
    return json(receipt.status === "delivered" ? 200 : 202, { runId: claims.runId, ...receipt });
  } catch (err) {
    // Used before (another payload), or the run has finished: answer with the wait's decision when it has one.
    if (err instanceof SignalConflictError || err instanceof RunFinishedError) await explainFinished(ctx, claims.runId, claims.signal, claims.waitId);
    throw err;
  }
}

/**
 * A link belongs to one run, not to its id: after retention, a later run may reuse the id, and
 * an old link must not decide it. Only a genuine token gets here, so 410 reveals nothing.
 */
function assertSameRun(claims: LinkClaims, run: RunMeta): void {
  if (run.createdAt !== claims.runCreatedAt) {
    throw new HttpError(410, "LinkExpiredError", "this approval link was issued to an earlier run with this id");
  }
}

/**
 * Who sends an approval: the token's approver, proven by the link; else the `approver` the body
 * names, only claimed. A body that names someone else than the link's approver is refused.
 */
function senderOf(claims: LinkClaims, payload: unknown): SignalSender | undefined {
  const named = typeof payload === "object" && payload !== null && Object.hasOwn(payload, "approver") ? (payload as { approver: unknown }).approver : undefined;
  if (claims.approver !== undefined) {
    if (named !== undefined && named !== claims.approver) {
      throw new HttpError(403, "ApproverMismatchError", "this approval link belongs to another approver than the body names", { issues: [{ path: "approver", message: "must be the link's approver" }] });
    }
    return { id: claims.approver, verified: true };
  }
  return typeof named === "string" && named !== "" ? { id: named, verified: false } : undefined;
}

/** Throws `WaitResolvedError` with the decision of the wait a refused signal was for (by id, else the latest for its name), if decided. */
async function explainFinished(ctx: RouteContext, runId: string, signal: string, waitId: string | undefined): Promise<void> {
  const { entries } = await ctx.client.history(runId);
  const target = waitId ?? waitsOf(entries).filter((w) => w.signal === signal).at(-1)?.waitId;
  const decision = target === undefined ? undefined : decisionOf(entries, target);
  if (target !== undefined && decision) throw new WaitResolvedError(runId, target, decision);
}

function parse<T extends z.Shape<unknown>>(schema: T, body: unknown, required: string[]): z.output<T> {
  const parsed = schema.safeParse(body);
  const missing = typeof body === "object" && body !== null ? required.filter((k) => !(k in body)) : [];
  if (!parsed.success || missing.length > 0) {
    const issues = parsed.success ? [] : zodIssues(parsed.error);
    for (const k of missing) if (!issues.some((i) => i.path === k)) issues.push({ path: k, message: "required" });
    throw new HttpError(400, "InvalidRequestError", "the request body does not have the expected shape", { issues });
  }
  return parsed.data;
}

interface WaitInfo {
  waitId: string;
  signal: string;
  timeoutAt: number | undefined;
  /** When the wait was recorded. */
  at: number;
}

function waitsOf(entries: HistoryEntry[]): WaitInfo[] {
  const out: WaitInfo[] = [];
  for (const e of entries) {
    const r = e.record;
    if (r?.type === "step" && r.kind === "wait") out.push({ waitId: r.stepId, signal: r.signal, timeoutAt: r.timeoutAt, at: r.at });
  }
  return out;
}

function openWaits(entries: HistoryEntry[]): WaitInfo[] {
  return waitsOf(entries).filter((w) => decisionOf(entries, w.waitId) === undefined);
}

function decisionOf(entries: HistoryEntry[], waitId: string): WaitDecision | undefined {
  for (const e of entries) {
    const r = e.record;
    if (r?.type !== "resolution" || r.stepId !== waitId) continue;
    return decision(r);
  }
  return undefined;
}

function claimsOf(run: RunMeta, w: WaitInfo): LinkClaims {
  return { runId: run.runId, waitId: w.waitId, signal: w.signal, runCreatedAt: run.createdAt, issuedAt: w.at, ...(w.timeoutAt === undefined ? {} : { expiresAt: w.timeoutAt }) };
}
