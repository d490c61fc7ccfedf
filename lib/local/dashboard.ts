/**
 * The dashboard the dev server (and `waymark dashboard --table`) serves: runs by status with
 * search and paging at `/`, a page per run at `/ui/runs/<runId>` (dashboard-run.ts), a start
 * form at `/ui/start` (dashboard-start.ts). Operators approve or reject open waits, cancel runs
 * and start runs with plain forms; every form carries the server's form token and must come
 * from this origin (form-guard.ts). Pages poll themselves for changes (dashboard-live.ts).
 * Every value is escaped by the `html` tag; the CSP allows only same-origin scripts and forms.
 */
import { randomBytes } from "node:crypto";
import type { Client } from "../client.ts";
import { RunNotFoundError } from "../core/errors.ts";
import { CSRF_FIELD, sameToken } from "../http/form-guard.ts";
import { type SafeHtml, html, htmlResponse, page, time } from "../http/html.ts";
import type { HttpRequest, HttpResponse } from "../http/types.ts";
import { type ApprovalLinks, RUN_STATUSES, type RunMeta, type RunStatus } from "../ports.ts";
import { LIVE_SCRIPT, LIVE_SCRIPT_PATH } from "./dashboard-live.ts";
import { cancelRun, runPage, signalWait, wakeRun } from "./dashboard-run.ts";
import { startPage, startRun } from "./dashboard-start.ts";

export { escapeHtml } from "../http/html.ts";

/**
 * Options of `createDashboard`: the client whose runs it shows, approval links, and the journal's
 * name for the header.
 */
export interface DashboardOptions {
  client: Client;
  /** Mints the approval links shown with open waits (the dev server's). */
  links?: ApprovalLinks;
  /** Where the journal lives, shown in the header (`.waymark/journal.db`, `table waymark-journal`). */
  source?: string;
}

/** What the dashboard's pages share. */
export interface DashboardContext {
  client: Client;
  links: ApprovalLinks | undefined;
  formToken: string;
  source: string;
  /** Checks a posted form token. */
  tokenOk: (token: string) => boolean;
}

/** A dashboard: answers its own paths, `undefined` for every other request. */
export type Dashboard = (req: HttpRequest) => Promise<HttpResponse | undefined>;

const STATUSES = RUN_STATUSES;
const PAGE_SIZE = 25;
/** How many of the newest runs a search looks through. */
const SEARCH_DEPTH = 2000;

/**
 * Creates the dashboard's request handler (the dev server mounts it in front of the webhook).
 *
 * @example
 * ```ts
 * const dashboard = createDashboard({ client: runtime.client });
 * const res = (await dashboard({ method: "GET", path: "/", query: {}, headers: {}, body: "" }))!;
 * ```
 */
export function createDashboard(options: DashboardOptions): Dashboard {
  const formToken = randomBytes(32).toString("base64url");
  const ctx: DashboardContext = { client: options.client, links: options.links, formToken, source: options.source ?? "", tokenOk: (t) => sameToken(t, formToken) };
  return async (req) => {
    const method = String(req.method).toUpperCase();
    const parts = req.path.split("/").slice(1).map((p) => safeDecode(p));
    try {
      if (req.path === "/" && method === "GET") return await listPage(ctx, req);
      if (req.path === LIVE_SCRIPT_PATH && method === "GET") return { status: 200, headers: { "content-type": "text/javascript; charset=utf-8", "cache-control": "no-store", "x-content-type-options": "nosniff" }, body: LIVE_SCRIPT };
      if (parts[0] !== "ui") return undefined;
      if (parts[1] === "start" && parts.length === 2) {
        if (method === "GET") return await startPage(ctx, req);
        if (method === "POST") return await startRun(ctx, req);
      }
      if (parts[1] === "runs" && parts[2]) {
        const runId = parts[2];
        if (parts.length === 3 && method === "GET") return await runPage(ctx, runId, req.query);
        if (parts.length === 4 && parts[3] === "cancel" && method === "POST") return await cancelRun(ctx, req, runId);
        if (parts.length === 4 && parts[3] === "wake" && method === "POST") return await wakeRun(ctx, req, runId);
        if (parts.length === 5 && parts[3] === "waits" && parts[4] && method === "POST") return await signalWait(ctx, req, runId, parts[4]);
      }
      return undefined;
    } catch (err) {
      if (err instanceof RunNotFoundError) return shell(ctx, 404, "Run not found", html`<main><h1>Run not found</h1><p>No run is named <span class="mono">${parts[2] ?? ""}</span> in this journal.</p><p><a href="/">All runs</a></p></main>`);
      const status = (err as { status?: unknown }).status;
      if (typeof status === "number" && status >= 400 && status < 500) return shell(ctx, status, "Not accepted", html`<main><h1>Not accepted</h1><p>${(err as Error).message}</p><p><a href="/">All runs</a></p></main>`);
      throw err;
    }
  };
}

/** A dashboard page with the header bar and the live-update script. */
export function shell(ctx: DashboardContext, status: number, title: string, body: SafeHtml, headers: Record<string, string> = {}): HttpResponse {
  const header = html`<header class="top"><a href="/">Waymark</a><span class="muted">${ctx.source}</span><span style="flex:1"></span><a href="/ui/start">Start a run</a></header>`;
  return htmlResponse(status, page({ title, header, body, script: LIVE_SCRIPT_PATH }), { scripts: true, headers });
}

/** The hidden form-token field every dashboard form carries. */
export function tokenField(ctx: DashboardContext): SafeHtml {
  return html`<input type="hidden" name="${CSRF_FIELD}" value="${ctx.formToken}">`;
}

/** A 303 to a dashboard page after a form post. */
export function seeOther(location: string): HttpResponse {
  return { status: 303, headers: { location, "cache-control": "no-store" }, body: "" };
}

export function runHref(runId: string): string {
  return `/ui/runs/${encodeURIComponent(runId)}`;
}

export function statusBadge(status: string): SafeHtml {
  return html`<span class="status s-${status}">${status}</span>`;
}

async function listPage(ctx: DashboardContext, req: HttpRequest): Promise<HttpResponse> {
  const status = STATUSES.find((s) => s === req.query.status);
  const q = (req.query.q ?? "").trim();
  let runs: RunMeta[];
  let next: string | undefined;
  let prev: string | undefined;
  if (q) {
    const found = await search(ctx.client, q, status);
    const pageNo = Math.max(1, Number.parseInt(req.query.page ?? "1", 10) || 1);
    runs = found.slice((pageNo - 1) * PAGE_SIZE, pageNo * PAGE_SIZE);
    if (found.length > pageNo * PAGE_SIZE) next = query({ status, q, page: String(pageNo + 1) });
    if (pageNo > 1) prev = query({ status, q, page: String(pageNo - 1) });
  } else {
    const got = await ctx.client.list({ limit: PAGE_SIZE, ...(status ? { status } : {}), ...(req.query.cursor ? { cursor: req.query.cursor } : {}) });
    runs = got.runs;
    if (got.cursor) next = query({ status, cursor: got.cursor });
    if (req.query.cursor) prev = query({ status });
  }
  const tabs = [undefined, ...STATUSES].map((s) => html`<a href="${query({ status: s, q })}"${s === status ? html` aria-current="page"` : ""}>${s ?? "all"}</a>`);
  const rows = runs.map((r) => {
    const detail = r.status === "suspended" || r.status === "queued" ? (r.waitingFor ?? "") : r.error ? `${r.error.name}: ${r.error.message}` : "";
    return html`<tr><td class="mono"><a href="${runHref(r.runId)}">${r.runId}</a></td><td>${r.workflow}</td><td>${statusBadge(r.status)}</td><td>${time(r.updatedAt)}</td><td>${detail}</td></tr>`;
  });
  const body = html`<main data-live>
<h1>Runs${status ? html` <span class="muted">· ${status}</span>` : ""}</h1>
<nav class="tabs" aria-label="Status">${tabs}</nav>
<form method="get" action="/" role="search" style="margin:1rem 0"><label for="q">Search run ids and workflows</label>
${status ? html`<input type="hidden" name="status" value="${status}">` : ""}<div class="actions" style="margin-top:.3rem"><input type="search" id="q" name="q" value="${q}" style="max-width:24rem"><button type="submit">Search</button></div></form>
<table><thead><tr><th scope="col">run</th><th scope="col">workflow</th><th scope="col">status</th><th scope="col">updated</th><th scope="col">detail</th></tr></thead>
<tbody>${rows.length ? rows : html`<tr><td colspan="5">${q ? `no runs match "${q}"` : "no runs"}</td></tr>`}</tbody></table>
<p class="actions">${prev ? html`<a href="${prev}" rel="prev">← Newer</a>` : ""}${next ? html`<a href="${next}" rel="next">Older →</a>` : ""}</p>
</main>`;
  return shell(ctx, 200, "Waymark runs", body);
}

async function search(client: Client, q: string, status: RunStatus | undefined): Promise<RunMeta[]> {
  const needle = q.toLowerCase();
  const found: RunMeta[] = [];
  // An exact run id is found however old the run is.
  const exact = await client.get(q).catch(() => undefined);
  if (exact && (!status || exact.status === status)) found.push(exact);
  let cursor: string | undefined;
  let seen = 0;
  do {
    const got = await client.list({ limit: 200, ...(status ? { status } : {}), ...(cursor ? { cursor } : {}) });
    for (const r of got.runs) if (r.runId !== exact?.runId && (r.runId.toLowerCase().includes(needle) || r.workflow.toLowerCase().includes(needle))) found.push(r);
    seen += got.runs.length;
    cursor = got.cursor;
  } while (cursor && seen < SEARCH_DEPTH);
  return found;
}

function query(params: Record<string, string | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v) q.set(k, v);
  const text = q.toString();
  return text ? `/?${text}` : "/";
}

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return "";
  }
}
