import type { StandardSchemaV1 } from "./standard-schema.ts";

/**
 * A schema failure as plain path/message pairs (what errors and HTTP bodies show), from any
 * Standard Schema library's issues (zod's included: its messages pass through unchanged) or
 * from Waymark's own format checks (shape.ts).
 */
export function zodIssues(error: { issues: ReadonlyArray<StandardSchemaV1.Issue> }): Array<{ path: string; message: string }> {
  return error.issues.map((i) => ({ path: (i.path ?? []).map((p) => String(typeof p === "object" ? p.key : p)).join("."), message: i.message }));
}
