/**
 * The dashboard's start form: pick a workflow the dashboard hosts, name the run, fill in its
 * input from a form derived from the input schema (or JSON when the schema gives no form).
 */
import { randomUUID } from "node:crypto";
import { InvalidInputError, RunConflictError } from "../core/errors.ts";
import type { AnyWorkflow } from "../core/definition.ts";
import { readGuardedForm } from "../http/form-guard.ts";
import { html } from "../http/html.ts";
import { jsonSchemaOf } from "../http/json-schema.ts";
import { type FormSpec, errorsByField, formSpec, readForm, renderForm } from "../http/schema-form.ts";
import type { HttpRequest, HttpResponse } from "../http/types.ts";
import { type DashboardContext, runHref, seeOther, shell, tokenField } from "./dashboard.ts";

interface Entered {
  values: URLSearchParams;
  errors: ReadonlyMap<string, string>;
}

/** `GET /ui/start[?workflow=<name>]`. */
export async function startPage(ctx: DashboardContext, req: HttpRequest, entered?: Entered, status = 200): Promise<HttpResponse> {
  const workflows = ctx.client.startable();
  const chosen = workflows.find((w) => w.name === (entered?.values.get("workflow") ?? req.query.workflow)) ?? (workflows.length === 1 ? workflows[0] : undefined);
  const choices = html`<nav class="tabs" aria-label="Workflow">${workflows.map((w) => html`<a href="/ui/start?workflow=${encodeURIComponent(w.name)}"${w === chosen ? html` aria-current="page"` : ""}>${w.name}${w.version > 1 ? ` v${w.version}` : ""}</a>`)}</nav>`;
  let form = html``;
  if (chosen) {
    const spec = await inputForm(chosen);
    const runId = entered?.values.get("runId") ?? `${chosen.name}-${randomUUID().slice(0, 8)}`;
    const runIdError = entered?.errors.get("runId");
    const fields = spec
      ? renderForm(spec, { submitLabel: "Start run", ...(entered ? { values: entered.values, errors: withoutRunId(entered.errors) } : {}) })
      : html`<label for="f-input">input (JSON)</label><textarea id="f-input" name="input" class="mono" required>${entered?.values.get("input") ?? "{}"}</textarea>${entered?.errors.size ? html`<div class="alert" role="alert">${[...withoutRunId(entered.errors)].map(([k, v]) => (k ? `${k}: ${v}` : v)).join("; ")}</div>` : ""}<div class="actions"><button type="submit" class="primary">Start run</button></div>`;
    form = html`<form method="post" action="/ui/start" class="fields" aria-label="Start ${chosen.name}">${tokenField(ctx)}<input type="hidden" name="workflow" value="${chosen.name}">
<label for="runId">run id</label><input type="text" id="runId" name="runId" value="${runId}" required${runIdError ? html` aria-invalid="true" aria-describedby="runId-error"` : ""}>${runIdError ? html`<div class="bad" id="runId-error">${runIdError}</div>` : ""}
${fields}</form>`;
  }
  const body = html`<main><p><a href="/">← All runs</a></p><h1>Start a run</h1>
${workflows.length === 0 ? html`<p class="notice">This dashboard hosts no workflow code: start it with <span class="mono">--workflows &lt;module&gt;</span> to start runs from here.</p>` : choices}
${form}</main>`;
  return shell(ctx, status, "Start a run", body);
}

/** `POST /ui/start`: starts the run and shows its page. */
export async function startRun(ctx: DashboardContext, req: HttpRequest): Promise<HttpResponse> {
  const form = readGuardedForm(req, ctx.tokenOk);
  const workflow = ctx.client.startable().find((w) => w.name === form.get("workflow"));
  if (!workflow) return startPage(ctx, req, { values: form, errors: new Map([["", "choose a workflow this dashboard hosts"]]) }, 422);
  const spec = await inputForm(workflow);
  let input: unknown;
  if (spec) input = readForm(spec, form);
  else {
    try {
      input = JSON.parse(form.get("input") ?? "");
    } catch {
      return startPage(ctx, req, { values: form, errors: new Map([["", "the input is not valid JSON"]]) }, 422);
    }
  }
  const runId = (form.get("runId") ?? "").trim();
  try {
    await ctx.client.start(workflow, { runId, input });
  } catch (err) {
    if (err instanceof InvalidInputError) return startPage(ctx, req, { values: form, errors: errorsByField(err.issues) }, 422);
    if (err instanceof RunConflictError) return startPage(ctx, req, { values: form, errors: new Map([["runId", "a run with this id already exists with another input"]]) }, 409);
    throw err;
  }
  return seeOther(runHref(runId));
}

/** The input form, or `undefined` when the schema gives none (then the input is typed as JSON). */
async function inputForm(workflow: AnyWorkflow): Promise<FormSpec | undefined> {
  const json = await jsonSchemaOf(workflow.input);
  const spec = formSpec(json);
  return json?.type === "object" && !(spec.decision && spec.fields.length === 0) ? spec : undefined;
}

function withoutRunId(errors: ReadonlyMap<string, string>): Map<string, string> {
  return new Map([...errors].filter(([k]) => k !== "runId"));
}
