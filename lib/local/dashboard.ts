/** The dev server's read-only dashboard: runs and their status, as escaped HTML. */
import type { Client } from "../client.ts";

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/** Escapes text for HTML element content and quoted attributes. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);
}

/** The dashboard page: the newest runs (up to 100) with status and what they wait for. */
export async function renderDashboard(client: Client): Promise<string> {
  const { runs } = await client.list({ limit: 100 });
  const rows = runs
    .map((r) => {
      const detail = r.status === "suspended" ? (r.waitingFor ?? "") : r.error ? `${r.error.name}: ${r.error.message}` : "";
      const cells = [r.runId, r.workflow, r.status, new Date(r.updatedAt).toISOString(), detail];
      return `<tr>${cells.map((c) => `<td>${escapeHtml(c)}</td>`).join("")}</tr>`;
    })
    .join("\n");
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Waymark runs</title>
<style>body{font:14px system-ui,sans-serif;margin:2rem}table{border-collapse:collapse}td,th{padding:.3rem .8rem;border-bottom:1px solid #ddd;text-align:left}</style>
</head><body><h1>Waymark runs</h1>
<table><thead><tr><th>run</th><th>workflow</th><th>status</th><th>updated</th><th>detail</th></tr></thead>
<tbody>
${rows || '<tr><td colspan="5">no runs</td></tr>'}
</tbody></table></body></html>`;
}
