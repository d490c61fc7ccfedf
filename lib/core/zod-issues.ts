import type { z } from "zod";

/** A schema failure as plain path/message pairs (what errors and HTTP bodies show). */
export function zodIssues(error: z.ZodError): Array<{ path: string; message: string }> {
  return error.issues.map((i) => ({ path: i.path.map(String).join("."), message: i.message }));
}
