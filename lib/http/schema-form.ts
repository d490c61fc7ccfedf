/**
 * Forms generated from a JSON Schema (see json-schema.ts), and the way back: a posted
 * `application/x-www-form-urlencoded` body read into the JSON value the schema checks. Flat
 * objects of strings, numbers, booleans and enums become inputs; a boolean `approved` becomes
 * Approve / Reject buttons. A schema that is not such an object (or has none) gets the buttons
 * alone, posting `{ approved: true | false }`. The schema validates what is posted either way.
 */
import { type SafeHtml, html } from "./html.ts";
import type { JsonSchema } from "./json-schema.ts";

export interface FormField {
  name: string;
  kind: "boolean" | "text" | "textarea" | "email" | "number" | "integer" | "enum";
  required: boolean;
  options?: string[];
  description?: string;
  maxLength?: number;
}

/** What a form posts: its fields, and whether Approve / Reject buttons decide the `approved` field. */
export interface FormSpec {
  fields: FormField[];
  decision: boolean;
}

/** The field name prefix in posted forms (so no field can be mistaken for `_csrf`). */
const PREFIX = "f.";
const BUTTONS_ONLY: FormSpec = { fields: [], decision: true };

/**
 * The form for a JSON Schema; Approve / Reject buttons alone when there is none or it is not a
 * flat object.
 *
 * @example
 * ```ts
 * formSpec({ type: "object", properties: { approved: { type: "boolean" }, note: { type: "string" } }, required: ["approved"] });
 * // { decision: true, fields: [{ name: "approved", kind: "boolean", required: true }, { name: "note", kind: "text", required: false }] }
 * ```
 */
export function formSpec(schema: JsonSchema | undefined): FormSpec {
  if (!schema || schema.type !== "object" || !schema.properties) return BUTTONS_ONLY;
  const required = new Set(schema.required ?? []);
  const fields: FormField[] = [];
  for (const [name, raw] of Object.entries(schema.properties)) {
    const field = fieldOf(name, raw, required.has(name));
    if (field) fields.push(field);
    else if (required.has(name)) return BUTTONS_ONLY; // a required field no input can express
  }
  const approved = fields.find((f) => f.name === "approved");
  return { fields, decision: approved?.kind === "boolean" };
}

function fieldOf(name: string, raw: JsonSchema, required: boolean): FormField | undefined {
  const s = raw.anyOf?.find((a) => a.type !== "null") ?? raw;
  const base = { name, required, ...(s.description ?? raw.description ? { description: s.description ?? raw.description ?? "" } : {}) };
  if (Array.isArray(s.enum) && s.enum.every((v) => typeof v === "string")) return { ...base, kind: "enum", options: s.enum as string[] };
  switch (s.type) {
    case "boolean":
      return { ...base, kind: "boolean" };
    case "integer":
      return { ...base, kind: "integer" };
    case "number":
      return { ...base, kind: "number" };
    case "string":
      if (s.format === "email") return { ...base, kind: "email" };
      return { ...base, kind: s.maxLength !== undefined && s.maxLength > 120 ? "textarea" : "text", ...(s.maxLength === undefined ? {} : { maxLength: s.maxLength }) };
    default:
      return undefined;
  }
}

export interface RenderOptions {
  /** Values shown in place of an input and always posted (the link's approver). */
  fixed?: Readonly<Record<string, string>>;
  /** What the user typed, to show again with the errors. */
  values?: URLSearchParams;
  /** Problems by field name (`""` for the whole value). */
  errors?: ReadonlyMap<string, string>;
  /** The submit button's text when the form has no Approve / Reject buttons. Default "Send". */
  submitLabel?: string;
}

/**
 * The inputs and the submit buttons of a form (the caller writes `<form>` and its hidden fields).
 *
 * @example
 * ```ts
 * html`<form method="post" class="fields">${csrfField}${renderForm(spec, { fixed: { approver: "ana" } })}</form>`;
 * ```
 */
export function renderForm(spec: FormSpec, o: RenderOptions = {}): SafeHtml {
  const fixed = o.fixed ?? {};
  const inputs = spec.fields.filter((f) => !(spec.decision && f.name === "approved")).map((f) => {
    const id = `f-${f.name}`;
    const error = o.errors?.get(f.name);
    const errorId = `${id}-error`;
    const label = html`<label for="${id}">${f.name}${f.required ? "" : html` <span class="hint">(optional)</span>`}</label>`;
    const hint = f.description ? html`<div class="hint">${f.description}</div>` : "";
    const err = error ? html`<div class="bad" id="${errorId}">${error}</div>` : "";
    const fixedValue = Object.hasOwn(fixed, f.name) ? fixed[f.name] : undefined;
    if (fixedValue !== undefined) return html`<div><span class="muted">${f.name}</span>: <strong id="${id}">${fixedValue}</strong></div>`;
    const value = o.values?.get(PREFIX + f.name) ?? "";
    const common = html`id="${id}" name="${PREFIX + f.name}"${f.required && f.kind !== "boolean" ? html` required` : ""}${error ? html` aria-invalid="true" aria-describedby="${errorId}"` : ""}`;
    switch (f.kind) {
      case "boolean":
        return html`<div><input type="checkbox" value="true" ${common}${value === "true" ? html` checked` : ""}> ${label}${hint}${err}</div>`;
      case "enum":
        return html`<div>${label}${hint}<select ${common}>${f.required ? "" : html`<option value=""></option>`}${(f.options ?? []).map((opt) => html`<option${opt === value ? html` selected` : ""}>${opt}</option>`)}</select>${err}</div>`;
      case "textarea":
        return html`<div>${label}${hint}<textarea ${common}${f.maxLength === undefined ? "" : html` maxlength="${f.maxLength}"`}>${value}</textarea>${err}</div>`;
      case "number":
      case "integer":
        return html`<div>${label}${hint}<input type="number"${f.kind === "number" ? html` step="any"` : ""} value="${value}" ${common}>${err}</div>`;
      default:
        return html`<div>${label}${hint}<input type="${f.kind === "email" ? "email" : "text"}" value="${value}" ${common}${f.maxLength === undefined ? "" : html` maxlength="${f.maxLength}"`}>${err}</div>`;
    }
  });
  const shown = new Set(spec.fields.filter((f) => !(spec.decision && f.name === "approved") && !Object.hasOwn(fixed, f.name)).map((f) => f.name));
  const rest = [...(o.errors ?? new Map<string, string>())].filter(([name]) => !shown.has(name)).map(([name, message]) => (name ? `${name}: ${message}` : message));
  const whole = rest.join("; ");
  const buttons = spec.decision
    ? html`<button type="submit" class="primary" name="${PREFIX}approved" value="true">Approve</button><button type="submit" class="danger" name="${PREFIX}approved" value="false">Reject</button>`
    : html`<button type="submit" class="primary">${o.submitLabel ?? "Send"}</button>`;
  return html`${whole ? html`<div class="alert" role="alert">${whole}</div>` : ""}${inputs}<div class="actions">${buttons}</div>`;
}

/**
 * Reads a posted form into the value the schema will check: booleans from `true` (or a ticked
 * box), numbers parsed, empty optional fields left out, fixed values added.
 *
 * @example
 * ```ts
 * readForm(spec, new URLSearchParams("f.approved=true&f.note=ok"), { approver: "ana" });
 * // { approved: true, note: "ok", approver: "ana" }
 * ```
 */
export function readForm(spec: FormSpec, form: URLSearchParams, fixed: Readonly<Record<string, string>> = {}): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const fields = spec.fields.length > 0 ? spec.fields : [{ name: "approved", kind: "boolean", required: true } satisfies FormField];
  for (const f of fields) {
    const raw = form.get(PREFIX + f.name);
    if (f.kind === "boolean") {
      if (raw !== null || !(spec.decision && f.name === "approved")) out[f.name] = raw === "true" || raw === "on";
      continue;
    }
    if (raw === null || (raw === "" && !f.required)) continue;
    if (f.kind === "number" || f.kind === "integer") {
      const n = Number(raw);
      out[f.name] = raw.trim() !== "" && Number.isFinite(n) ? n : raw;
    } else out[f.name] = raw;
  }
  for (const [k, v] of Object.entries(fixed)) out[k] = v;
  return out;
}

/** Issues (`{ path, message }`, from `InvalidInputError`) by top-level field name. */
export function errorsByField(issues: ReadonlyArray<{ path: string; message: string }>): Map<string, string> {
  const out = new Map<string, string>();
  for (const i of issues) {
    const name = i.path.split(".")[0] ?? "";
    out.set(name, out.has(name) ? `${out.get(name)}; ${i.message}` : i.message);
  }
  return out;
}
