/**
 * The approver's page: what an approval link shows in a browser (`GET` with `Accept: text/html`)
 * and what its form posts (`application/x-www-form-urlencoded`). The link's token stays the only
 * capability; the form adds a same-origin check and a form token derived from it (form-guard.ts).
 * Every refusal is a page too: a forged link (404), an expired one (410), a decided wait, an
 * ended run. API clients never see these: JSON requests take the routes in routes.ts.
 */
import type { Client, HistoryEntry } from "../client.ts";
import { InvalidInputError, RunFinishedError, RunNotFoundError, SignalConflictError, WaitNotFoundError, WaitResolvedError } from "../core/errors.ts";
import type { LinkClaims, RunMeta } from "../ports.ts";
import { TERMINAL_STATUSES } from "../ports.ts";
import { HttpError } from "./errors.ts";
import { CSRF_FIELD, linkFormToken, readGuardedForm, sameToken } from "./form-guard.ts";
import { type SafeHtml, html, htmlResponse, page, time } from "./html.ts";
import { jsonSchemaOf } from "./json-schema.ts";
import { approve, type RouteContext } from "./routes.ts";
import { type FormSpec, errorsByField, formSpec, readForm, renderForm } from "./schema-form.ts";
import { verifyApprovalToken } from "./tokens.ts";
import type { HttpRequest, HttpResponse } from "./types.ts";

export interface ApprovalPageContext {
  route: RouteContext;
  /** The webhook secrets (the first mints form tokens; all verify, during rotation). */
  secrets: readonly string[];
  now: () => number;
  /** Told of a fault that did not change the answer (reading an approval back after it was recorded). */
  onFault?: (err: unknown) => void;
}

interface Loaded {
  claims: LinkClaims;
  signalId: string;
  run: RunMeta;
  entries: HistoryEntry[];
  wait: { at: number; summary?: string | undefined };
  spec: FormSpec;
  fixed: Record<string, string>;
}

/**
 * Answers `GET` (the page) or a form `POST` (the decision) on `/approvals/:token`.
 *
 * @example
 * ```ts
 * if (wantsHtml(req.headers)) return approvalPage(pageCtx, req, token);
 * ```
 */
export async function approvalPage(ctx: ApprovalPageContext, req: HttpRequest, token: string): Promise<HttpResponse> {
  try {
    const loaded = await load(ctx, token);
    if (typeof loaded !== "object" || !("claims" in loaded)) return loaded;
    const formToken = linkFormToken(ctx.secrets[0] ?? "", token);
    if (String(req.method).toUpperCase() === "GET") return closed(loaded) ?? htmlResponse(200, askPage(loaded, formToken, {}));
    // A post is checked before anything else is said: no form token, no answer but 403.
    const form = readGuardedForm(req, (t) => ctx.secrets.some((s) => sameToken(t, linkFormToken(s, token))));
    const ended = closed(loaded, 409);
    if (ended) return ended;
    const payload = readForm(loaded.spec, form, loaded.fixed);
    try {
      await approve(ctx.route, loaded.claims, loaded.signalId, payload);
    } catch (err) {
      if (err instanceof InvalidInputError) return htmlResponse(422, askPage(loaded, formToken, { values: form, errors: errorsByField(err.issues) }));
      if (err instanceof WaitResolvedError || err instanceof SignalConflictError || err instanceof RunFinishedError) {
        const again = await load(ctx, token);
        return typeof again === "object" && "claims" in again ? (closed(again, 409) ?? message(409, "Already decided", html`<p>This request was decided by someone else a moment ago.</p>`)) : again;
      }
      throw err;
    }
    // The answer is recorded: from here on, whatever reading it back or drawing the page does,
    // the approver is told so (a 500 would have them post again, or think it was lost).
    const received = () => message(202, "Received", html`<p>Your answer was received. The workflow will pick it up shortly.</p>`);
    try {
      const after = await load(ctx, token);
      return typeof after === "object" && "claims" in after ? (closed(after) ?? received()) : received();
    } catch (err) {
      ctx.onFault?.(err);
      return received();
    }
  } catch (err) {
    if (err instanceof HttpError) return message(err.status, err.status === 403 ? "Not accepted" : "Cannot do that", html`<p>${err.message}</p>`);
    if (err instanceof RunNotFoundError || err instanceof WaitNotFoundError) return notFound();
    throw err;
  }
}

async function load(ctx: ApprovalPageContext, token: string): Promise<Loaded | HttpResponse> {
  const v = verifyApprovalToken(ctx.secrets, token, ctx.now());
  if (!v.ok) {
    if (v.reason === "expired" || v.reason === "legacy") return message(410, "This link has expired", html`<p>The time to answer this request has passed. If it still needs a decision, ask for a new link.</p>`);
    return notFound();
  }
  const { claims, signalId } = v;
  const { run, entries } = await ctx.route.client.history(claims.runId);
  if (run.createdAt !== claims.runCreatedAt) return message(410, "This link has expired", html`<p>This link was issued to an earlier run with the same name.</p>`);
  let wait: Loaded["wait"] | undefined;
  for (const e of entries) if (e.record?.type === "step" && e.record.kind === "wait" && e.record.stepId === claims.waitId && e.record.signal === claims.signal) wait = { at: e.record.at, summary: e.record.summary };
  if (!wait) return notFound();
  const schema = ctx.route.client.workflow(run.workflow)?.signals[claims.signal];
  const spec = formSpec(schema ? await jsonSchemaOf(schema) : undefined);
  const fixed: Record<string, string> = claims.approver !== undefined && spec.fields.some((f) => f.name === "approver") ? { approver: claims.approver } : {};
  return { claims, signalId, run, entries, wait, spec, fixed };
}

/** The page for a wait that can no longer be decided (decided, or its run ended), if so. */
function closed(l: Loaded, status = 200): HttpResponse | undefined {
  const resolution = l.entries.find((e) => e.record?.type === "resolution" && e.record.stepId === l.claims.waitId)?.record;
  if (resolution?.type === "resolution") {
    if (resolution.via === "cancelled") return message(status === 200 ? 410 : status, "Nothing left to decide", html`<p>This workflow run was cancelled (${time(resolution.at)}) while it waited for this answer; the request is closed.</p>`, l);
    if (resolution.via === "timeout") return message(status === 200 ? 410 : status, "This request has expired", html`<p>No answer came before the deadline (${time(resolution.at)}); the workflow went on without one.</p>`, l);
    const signal = l.entries.find((e) => e.record?.type === "signal" && e.record.signalId === resolution.signalId)?.record;
    const payload = signal?.type === "signal" ? signal.payload : undefined;
    if (resolution.signalId === l.signalId) {
      const verdict = typeof payload === "object" && payload !== null && "approved" in payload ? ((payload as { approved: unknown }).approved === true ? "Approved" : "Rejected") : "Answer recorded";
      return message(status === 409 ? 200 : status, verdict, html`<p role="status">Your answer was recorded on ${time(resolution.at)}. Thank you.</p>${answer(payload)}`, l);
    }
    const by = signal?.type === "signal" && signal.sender ? html` by ${signal.sender.id}${signal.sender.verified ? "" : " (as they said)"}` : "";
    return message(status, "Already decided", html`<p>This request was already answered${by} on ${time(resolution.at)}.</p>`, l);
  }
  if (TERMINAL_STATUSES.has(l.run.status)) return message(status === 200 ? 410 : status, "Nothing left to decide", html`<p>This workflow run has ${l.run.status === "cancelled" ? "been cancelled" : "ended"}; the request is closed.</p>`, l);
  return undefined;
}

function askPage(l: Loaded, formToken: string, o: { values?: URLSearchParams; errors?: ReadonlyMap<string, string> }): string {
  const body = html`<main class="narrow">
<h1>Approval requested</h1>
${about(l)}
<form method="post" class="fields" aria-label="Your decision">
<input type="hidden" name="${CSRF_FIELD}" value="${formToken}">
${renderForm(l.spec, { fixed: l.fixed, ...(o.values ? { values: o.values } : {}), ...(o.errors ? { errors: o.errors } : {}) })}
</form></main>`;
  return page({ title: `Approval requested: ${l.run.workflow}`, body });
}

function about(l: Loaded): SafeHtml {
  const summary = l.wait.summary ?? `Run ${l.run.runId} of ${l.run.workflow} is waiting for "${l.claims.signal}".`;
  return html`<p class="summary">${summary}</p>
<dl><dt>Workflow</dt><dd>${l.run.workflow}</dd><dt>Run</dt><dd class="mono">${l.run.runId}</dd><dt>Requested</dt><dd>${time(l.wait.at)}</dd>${l.claims.expiresAt === undefined ? "" : html`<dt>Answer by</dt><dd>${time(l.claims.expiresAt)}</dd>`}${l.claims.approver === undefined ? "" : html`<dt>Asked of</dt><dd>${l.claims.approver}</dd>`}</dl>`;
}

function answer(payload: unknown): SafeHtml | string {
  if (typeof payload !== "object" || payload === null) return "";
  return html`<dl>${Object.entries(payload).map(([k, v]) => html`<dt>${k}</dt><dd>${typeof v === "string" ? v : JSON.stringify(v)}</dd>`)}</dl>`;
}

function message(status: number, title: string, text: SafeHtml, l?: Loaded): HttpResponse {
  return htmlResponse(status, page({ title, body: html`<main class="narrow"><h1>${title}</h1>${text}${l ? about(l) : ""}</main>` }));
}

function notFound(): HttpResponse {
  return message(404, "This link is not valid", html`<p>Check that you opened the whole link from your message. A link that was changed or made up does not work.</p>`);
}
