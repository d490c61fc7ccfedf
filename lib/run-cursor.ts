/**
 * The `listRuns` cursor of the stores that page by (createdAt, runId): SQLite and memory.
 * Opaque to callers; a cursor that is not one is an {@link InvalidCursorError}.
 */
import { InvalidCursorError } from "./core/errors.ts";
import type { RunMeta } from "./ports.ts";

export function encodeRunCursor(run: Pick<RunMeta, "createdAt" | "runId">): string {
  return Buffer.from(JSON.stringify([run.createdAt, run.runId])).toString("base64url");
}

export function decodeRunCursor(cursor: string): { createdAt: number; runId: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
  } catch {
    parsed = undefined;
  }
  if (!Array.isArray(parsed) || typeof parsed[0] !== "number" || typeof parsed[1] !== "string") throw new InvalidCursorError(cursor);
  return { createdAt: parsed[0], runId: parsed[1] };
}
