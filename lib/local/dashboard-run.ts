/**
 * The dashboard's page of one run: its state, input and outcome, its timeline (steps,
 * attempts, durations, errors, results), its open waits with their approval links and a form
 * to answer each, and a cancel button; plus the two posts those forms make.
 */
import { randomUUID } from "node:crypto";
import type { HistoryEntry } from "../client.ts";
import { InvalidInputError, RunFinishedError, WaitResolvedError } from "../core/errors.ts";
import type { ParentRecord, WaitRecord } from "../core/records.ts";
import { readGuardedForm } from "../http/form-guard.ts";
import { durationText } from "../http/display.ts";
import { type SafeHtml, html, time, trusted } from "../http/html.ts";
import { jsonSchemaOf } from "../http/json-schema.ts";
import { errorsByField, formSpec, readForm, renderForm } from "../http/schema-form.ts";
import type { HttpRequest, HttpResponse } from "../http/types.ts";
import { type RunMeta, TERMINAL_STATUSES } from "../ports.ts";
import { timelineRows } from "../cli/timeline.ts";
import { waterfallLegend, waterfallSvg } from "./dashboard-svg.ts";
import { type WaterfallView, layoutWaterfall, viewOf, waterfallNav } from "./dashboard-waterfall.ts";
import { type DashboardContext, runHref, seeOther, shell, statusBadge, tokenField } from "./dashboard.ts";

interface Problem {
  waitId: string;
  values: URLSearchParams;
  errors: ReadonlyMap<string, string>;
}

/** `GET /ui/runs/<runId>[?from=<ms>&to=<ms>&lanes=<page>]`. */
export async function runPage(ctx: DashboardContext, runId: string, query: Readonly<Record<string, string | undefined>> = {}, problem?: Problem, status = 200): Promise<HttpResponse> {
  const { run, entries } = await ctx.client.history(runId);
  const terminal = TERMINAL_STATUSES.has(run.status);
  const waits = terminal ? [] : openWaits(entries);
  const parent = entries.find((e) => e.record?.type === "parent")?.record as ParentRecord | undefined;
  const rows = timelineRows(entries).map(
    (r, i) => html`<tr><td>${i + 1}</td><td class="mono">${r.step}</td><td>${r.kind}</td><td>${statusBadge(r.status)}</td><td>${r.attempts}</td><td>${r.duration}</td><td class="mono">${r.preview}</td></tr>`,
  );
  const body = html`<main data-live>
<p><a href="/">← All runs</a></p>
<h1>Run <span class="mono">${run.runId}</span> ${statusBadge(run.status)}</h1>
<dl><dt>Workflow</dt><dd>${run.workflow}</dd><dt>Created</dt><dd>${time(run.createdAt)}</dd><dt>Updated</dt><dd>${time(run.updatedAt)}</dd><dt>Invocations</dt><dd>${run.invocations}</dd>${parent ? html`<dt>Parent run</dt><dd><a class="mono" href="${runHref(parent.runId)}">${parent.runId}</a></dd>` : ""}${run.waitingFor && !terminal ? html`<dt>Waiting for</dt><dd>${run.waitingFor}</dd>` : ""}${run.wakeAt !== undefined && !terminal ? html`<dt>Next wake</dt><dd>${time(run.wakeAt)}</dd>` : ""}</dl>
${run.error ? html`<div class="alert" role="alert"><strong>${run.error.name}</strong>: ${run.error.message}</div>` : ""}
${await Promise.all(waits.map((w) => waitSection(ctx, run.runId, run.workflow, w, problem?.waitId === w.stepId ? problem : undefined)))}
<h2>Timeline</h2>
${waterfall(run, entries, viewOf(query))}
<table><thead><tr><th scope="col">#</th><th scope="col">step</th><th scope="col">kind</th><th scope="col">status</th><th scope="col">attempts</th><th scope="col">duration</th><th scope="col">result / error</th></tr></thead>
<tbody>${rows.length ? rows : html`<tr><td colspan="7">no steps yet</td></tr>`}</tbody></table>
<h2>Input</h2><pre class="mono">${JSON.stringify(run.input, null, 2)}</pre>
${run.status === "completed" ? html`<h2>Result</h2><pre class="mono">${JSON.stringify(run.result, null, 2) ?? ""}</pre>` : ""}
<details><summary>Journal records (${entries.length})</summary>${entries.map((e) => html`<h3 class="mono" style="font-size:.85rem">${e.key}${e.lateFor ? ` (late for ${e.lateFor})` : ""}</h3><pre class="mono">${e.record ? JSON.stringify(e.record, null, 2) : `unreadable: ${e.unreadable ?? ""}`}</pre>`)}</details>
${!terminal && run.waitingFor?.startsWith("sleep:") ? html`<h2>Sleeping</h2><form method="post" action="${runHref(run.runId)}/wake">${tokenField(ctx)}<p class="muted">Ends the sleep now (journaled, so every replay agrees) and runs on: a long cool-off need not be waited out in development.</p><button type="submit">Wake now</button></form>` : ""}
${terminal ? "" : html`<h2>Cancel</h2><form method="post" action="${runHref(run.runId)}/cancel">${tokenField(ctx)}<p class="muted">Asks the run to cancel: it gets CancelledError at its next wait or step, runs its compensations, then ends cancelled.</p><button type="submit" class="danger">Cancel run</button></form>`}
</main>`;
  return shell(ctx, status, `Run ${run.runId}`, body);
}

/** The SVG waterfall, its key, and the links to other windows and lane pages. */
function waterfall(run: RunMeta, entries: readonly HistoryEntry[], view: WaterfallView): SafeHtml {
  const layout = layoutWaterfall(run, entries, Date.now(), view);
  const here = (v: WaterfallView) => {
    const q = new URLSearchParams();
    if (v.from !== undefined && v.to !== undefined) {
      q.set("from", String(v.from));
      q.set("to", String(v.to));
    }
    if (v.lanes !== undefined && v.lanes > 1) q.set("lanes", String(v.lanes));
    const text = q.toString();
    return `${runHref(run.runId)}${text ? `?${text}` : ""}`;
  };
  const svg = waterfallSvg(layout, run.runId, { run: runHref, view: here });
  const nav = waterfallNav(layout).map((l) => html`<a href="${here(l.view)}"${l.rel ? html` rel="${l.rel}"` : ""}>${l.label}</a>`);
  const offset = (t: number) => (t === layout.whole.from ? "0" : `+${durationText(t - layout.whole.from)}`);
  const shown = layout.zoomed ? html`<p class="muted">Showing ${offset(layout.from)} to ${offset(layout.to)} since the first step (${durationText(layout.to - layout.from)} of ${durationText(layout.whole.to - layout.whole.from)}).</p>` : "";
  const undrawn = layout.undrawn.length ? html`<p class="notice">Not drawn, their times are outside the date range: <span class="mono">${layout.undrawn.join(", ")}</span> (see the table).</p>` : "";
  return html`<figure class="waterfall" style="margin:0">${shown}${trusted(svg)}<figcaption>${trusted(waterfallLegend())}</figcaption></figure>
${nav.length ? html`<p class="actions" aria-label="Timeline views">${nav}</p>` : ""}${undrawn}`;
}

async function waitSection(ctx: DashboardContext, runId: string, workflow: string, w: WaitRecord, problem: Problem | undefined): Promise<SafeHtml> {
  const schema = ctx.client.workflow(workflow)?.signals[w.signal];
  const link = ctx.links?.mint({ runId, waitId: w.stepId, signal: w.signal, runCreatedAt: (await ctx.client.get(runId)).createdAt, issuedAt: w.at, ...(w.timeoutAt === undefined ? {} : { expiresAt: w.timeoutAt }) });
  const form = schema
    ? html`<form method="post" class="fields" action="${runHref(runId)}/waits/${encodeURIComponent(w.stepId)}" aria-label="Answer ${w.stepId}">${tokenField(ctx)}${renderForm(formSpec(await jsonSchemaOf(schema)), problem ? { values: problem.values, errors: problem.errors } : {})}</form>`
    : html`<p class="notice">This dashboard does not host workflow ${workflow}: give it the workflow's code (<span class="mono">--workflows</span>) to answer from here.</p>`;
  return html`<section aria-labelledby="wait-${w.stepId}"><h2 id="wait-${w.stepId}">Waiting for signal “${w.signal}”</h2>
${w.summary ? html`<p class="summary">${w.summary}</p>` : ""}
<dl><dt>Wait</dt><dd class="mono">${w.stepId}</dd><dt>Since</dt><dd>${time(w.at)}</dd>${w.timeoutAt === undefined ? "" : html`<dt>Times out</dt><dd>${time(w.timeoutAt)}</dd>`}${link?.url ? html`<dt>Approval link</dt><dd><a class="mono" href="${link.url}">${link.url}</a></dd>` : ""}</dl>
${form}</section>`;
}

/** `POST /ui/runs/<runId>/waits/<waitId>`: answers one open wait from the dashboard. */
export async function signalWait(ctx: DashboardContext, req: HttpRequest, runId: string, waitId: string): Promise<HttpResponse> {
  const form = readGuardedForm(req, ctx.tokenOk);
  const { run, entries } = await ctx.client.history(runId);
  const wait = openWaits(entries).find((w) => w.stepId === waitId);
  const schema = wait ? ctx.client.workflow(run.workflow)?.signals[wait.signal] : undefined;
  if (!wait || !schema) return seeOther(runHref(runId));
  const payload = readForm(formSpec(await jsonSchemaOf(schema)), form);
  try {
    await ctx.client.signal(runId, wait.signal, payload, { waitId, signalId: `dashboard-${randomUUID()}` });
  } catch (err) {
    if (err instanceof InvalidInputError) return runPage(ctx, runId, {}, { waitId, values: form, errors: errorsByField(err.issues) }, 422);
    if (err instanceof WaitResolvedError || err instanceof RunFinishedError) return seeOther(runHref(runId));
    throw err;
  }
  return seeOther(runHref(runId));
}

/** `POST /ui/runs/<runId>/wake`: wake now (its sleep ends early). */
export async function wakeRun(ctx: DashboardContext, req: HttpRequest, runId: string): Promise<HttpResponse> {
  readGuardedForm(req, ctx.tokenOk);
  await ctx.client.wake(runId);
  return seeOther(runHref(runId));
}

/** `POST /ui/runs/<runId>/cancel`. */
export async function cancelRun(ctx: DashboardContext, req: HttpRequest, runId: string): Promise<HttpResponse> {
  readGuardedForm(req, ctx.tokenOk);
  await ctx.client.cancel(runId);
  return seeOther(runHref(runId));
}

function openWaits(entries: readonly HistoryEntry[]): WaitRecord[] {
  const resolved = new Set(entries.flatMap((e) => (e.record?.type === "resolution" ? [e.record.stepId] : [])));
  return entries.flatMap((e) => (e.record?.type === "step" && e.record.kind === "wait" && !resolved.has(e.record.stepId) ? [e.record] : []));
}
