/**
 * The `listRuns` cursor of the stores that page by (createdAt, runId): SQLite and memory (the
 * DynamoDB store pages by index key and shares only `cursorPayload`).
 * Opaque to callers; a cursor that is not one is an {@link InvalidCursorError}.
 */
import { InvalidCursorError } from "./core/errors.ts";
import type { RunMeta } from "./ports.ts";

export function encodeRunCursor(run: Pick<RunMeta, "createdAt" | "runId">): string {
  return Buffer.from(JSON.stringify([run.createdAt, run.runId])).toString("base64url");
}

/** The JSON a cursor carries, or `undefined` when it is not base64url JSON at all. */
export function cursorPayload(cursor: string): unknown {
  try {
    return JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
  } catch {
    return undefined;
  }
}

export function decodeRunCursor(cursor: string): { createdAt: number; runId: string } {
  const parsed = cursorPayload(cursor);
  if (!Array.isArray(parsed) || typeof parsed[0] !== "number" || typeof parsed[1] !== "string") throw new InvalidCursorError(cursor);
  return { createdAt: parsed[0], runId: parsed[1] };
}
