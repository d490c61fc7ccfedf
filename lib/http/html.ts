/**
 * HTML for the approver's page and the dashboard: a template tag that escapes every
 * interpolated value unless it is already {@link SafeHtml}, one page shell, and the headers
 * every page carries (a strict CSP, no framing, no Referer: capability URLs live in paths).
 */
import { INVALID_DATE_TEXT, instantText, isInstant } from "./display.ts";
import type { HttpResponse } from "./types.ts";

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/**
 * Escapes text for HTML element content and quoted attributes.
 *
 * @example
 * ```ts
 * escapeHtml(`<b title="x">`); // "&lt;b title=&quot;x&quot;&gt;"
 * ```
 */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);
}

/** Markup that is already safe: made only by {@link html} (or {@link trusted} for constants). */
export class SafeHtml {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

/**
 * The template tag: `html\`<td>${value}</td>\`` escapes `value`; arrays are joined; `undefined`,
 * `null` and `false` render nothing; {@link SafeHtml} passes through.
 *
 * @example
 * ```ts
 * const row = html`<tr><td>${run.runId}</td></tr>`; // a run id of "<img …>" is shown, not run
 * ```
 */
export function html(strings: TemplateStringsArray, ...values: unknown[]): SafeHtml {
  let out = strings[0] ?? "";
  values.forEach((v, i) => {
    out += render(v) + (strings[i + 1] ?? "");
  });
  return new SafeHtml(out);
}

/** A constant known to be safe markup (never pass user data). */
export function trusted(markup: string): SafeHtml {
  return new SafeHtml(markup);
}

function render(v: unknown): string {
  if (v instanceof SafeHtml) return v.text;
  if (Array.isArray(v)) return v.map(render).join("");
  if (v === undefined || v === null || v === false) return "";
  return escapeHtml(String(v));
}

const STYLE = `
:root{color-scheme:light dark;--fg:#1b1f24;--muted:#57606a;--line:#d0d7de;--bg:#fff;--accent:#0b57d0;--ok:#1a7f37;--bad:#b3261e;--warn:#9a6700}
@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--muted:#9da7b3;--line:#30363d;--bg:#0d1117;--accent:#7aa7ff;--ok:#3fb950;--bad:#ff7b72;--warn:#d29922}}
*{box-sizing:border-box}body{font:15px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:var(--fg);background:var(--bg)}
header.top{padding:.7rem 1.5rem;border-bottom:1px solid var(--line);display:flex;gap:1rem;align-items:center}
header.top a{color:inherit;text-decoration:none;font-weight:600}
main{padding:1.2rem 1.5rem;max-width:72rem}main.narrow{max-width:40rem;margin:0 auto}
h1{font-size:1.4rem;margin:.2rem 0 1rem}h2{font-size:1.1rem;margin:1.5rem 0 .5rem}
a{color:var(--accent)}table{border-collapse:collapse;width:100%}td,th{padding:.35rem .6rem;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}
th{font-weight:600;color:var(--muted);font-size:.85rem}td.mono,.mono{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.85rem;word-break:break-all}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.3rem 1rem;margin:0 0 1rem}dt{color:var(--muted)}dd{margin:0}
.status{display:inline-block;padding:0 .45rem;border-radius:1rem;border:1px solid var(--line);font-size:.85rem}
.s-completed,.ok{color:var(--ok)}.s-failed,.bad{color:var(--bad)}.s-suspended,.s-queued,.s-running,.s-pending{color:var(--warn)}.s-cancelled{color:var(--muted)}
.summary{font-size:1.1rem;padding:.8rem 1rem;border-left:4px solid var(--accent);background:color-mix(in srgb,var(--accent) 8%,transparent);margin:0 0 1rem}
form.fields label{display:block;font-weight:600;margin:.8rem 0 .2rem}form.fields .hint{color:var(--muted);font-size:.85rem;font-weight:400}
input[type=text],input[type=number],input[type=email],input[type=search],select,textarea{font:inherit;padding:.4rem .5rem;border:1px solid var(--line);border-radius:.3rem;width:100%;max-width:32rem;background:var(--bg);color:var(--fg)}
textarea{min-height:5rem}.inline{display:inline}.inline input,.inline select{width:auto}
button{font:inherit;padding:.45rem 1rem;border-radius:.3rem;border:1px solid var(--line);background:var(--bg);color:var(--fg);cursor:pointer}
button.primary{background:var(--ok);border-color:var(--ok);color:#fff}button.danger{background:var(--bad);border-color:var(--bad);color:#fff}
.actions{display:flex;gap:.6rem;margin-top:1.2rem;flex-wrap:wrap}
.alert{border:1px solid var(--bad);color:var(--bad);padding:.6rem .8rem;border-radius:.3rem;margin:0 0 1rem}
.notice{border:1px solid var(--line);padding:.6rem .8rem;border-radius:.3rem;margin:0 0 1rem}
nav.tabs a{margin-right:.8rem}nav.tabs a[aria-current]{font-weight:700;color:var(--fg)}
pre{white-space:pre-wrap;word-break:break-word;font-size:.85rem;margin:0}details summary{cursor:pointer;color:var(--muted)}
.muted{color:var(--muted)}
`;

export interface PageOptions {
  title: string;
  body: SafeHtml;
  /** Adds `<script src>` of this same-origin path (the dashboard's live updates). */
  script?: string;
  /** A header bar (the dashboard's). */
  header?: SafeHtml;
}

/** A whole HTML document. */
export function page(o: PageOptions): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="referrer" content="no-referrer"><title>${escapeHtml(o.title)}</title><style>${STYLE}</style>${o.script ? `<script src="${escapeHtml(o.script)}" defer></script>` : ""}
</head><body>${o.header?.text ?? ""}${o.body.text}</body></html>`;
}

/**
 * The Content-Security-Policy of every page: nothing but inline styles and same-origin forms,
 * plus same-origin scripts and fetches when `scripts` is set (the dashboard's live updates).
 */
export function contentSecurityPolicy(scripts = false): string {
  return ["default-src 'none'", "style-src 'unsafe-inline'", ...(scripts ? ["script-src 'self'", "connect-src 'self'"] : []), "form-action 'self'", "frame-ancestors 'none'", "base-uri 'none'"].join("; ");
}

/** An HTML response with the page headers. */
export function htmlResponse(status: number, document: string, options: { scripts?: boolean; headers?: Record<string, string> } = {}): HttpResponse {
  return {
    status,
    headers: {
      "content-type": "text/html; charset=utf-8",
      "content-security-policy": contentSecurityPolicy(options.scripts),
      "x-frame-options": "DENY",
      "x-content-type-options": "nosniff",
      "referrer-policy": "no-referrer",
      "cache-control": "no-store",
      ...options.headers,
    },
    body: document,
  };
}

/** True when the request asks for a page rather than JSON (a browser's `Accept`). */
export function wantsHtml(headers: Readonly<Record<string, string | undefined>>): boolean {
  return /(^|,)\s*text\/html\s*(;|,|$)/i.test(headers.accept ?? "");
}

/**
 * A moment as readable UTC text, inside a `<time>` element; a stored time outside the date
 * range (or not a number) reads "invalid date", with the raw value in its title.
 *
 * @example
 * ```ts
 * time(run.createdAt); // <time datetime="2026-03-01T12:00:00.000Z">2026-03-01 12:00 UTC</time>
 * ```
 */
export function time(ms: number): SafeHtml {
  if (!isInstant(ms)) return html`<span class="bad" title="${`stored time: ${String(ms)}`}">${INVALID_DATE_TEXT}</span>`;
  const iso = instantText(ms);
  return html`<time datetime="${iso}">${iso.slice(0, 16).replace("T", " ")} UTC</time>`;
}
