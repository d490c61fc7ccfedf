/**
 * How failures become responses. The body is always `{ error: { name, message, issues?, decision? } }`:
 * never a stack trace, and never a 5xx for a caller's mistake. A genuine server fault is a 500
 * with a generic message; the details go to the host's log only.
 */
import {
  RateLimitedError,
  InvalidInputError,
  RunConflictError,
  RunFinishedError,
  RunNotFoundError,
  SerializationError,
  SignalConflictError,
  UnknownSignalError,
  UnknownWorkflowError,
  WaitNotFoundError,
  WaitResolvedError,
  type WaitDecision,
} from "../core/errors.ts";
import type { HttpResponse } from "./types.ts";

/** Failures of the HTTP layer itself (before the client is called). */
export type HttpErrorName =
  | "NotFoundError"
  | "MethodNotAllowedError"
  | "PayloadTooLargeError"
  | "UnsupportedMediaTypeError"
  | "MalformedJsonError"
  | "InvalidRequestError"
  | "SignatureError"
  | "LinkNotFoundError"
  | "LinkExpiredError"
  | "ApproverMismatchError"
  | "ForbiddenError"
  | "ServiceUnavailableError";

export interface ErrorBody {
  name: string;
  message: string;
  issues?: ReadonlyArray<{ path: string; message: string }>;
  decision?: WaitDecision;
}

/** A refusal by the HTTP layer, with its status; thrown inside the handler, answered as JSON. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    override readonly name: HttpErrorName,
    message: string,
    readonly extra: { issues?: ErrorBody["issues"]; headers?: Record<string, string> } = {},
  ) {
    super(message);
  }
}

const BASE_HEADERS: Readonly<Record<string, string>> = {
  "content-type": "application/json; charset=utf-8",
  "cache-control": "no-store",
  "x-content-type-options": "nosniff",
  // Approval URLs carry their capability in the path: never leak it through a Referer.
  "referrer-policy": "no-referrer",
};

/** A JSON response with the headers every answer carries. */
export function json(status: number, body: unknown, headers: Record<string, string> = {}): HttpResponse {
  return { status, headers: { ...BASE_HEADERS, ...headers }, body: JSON.stringify(body) };
}

/** The response for a thrown value; `onFault` sees the ones that are the server's fault. */
export function errorResponse(err: unknown, onFault: (err: unknown) => void): HttpResponse {
  const fail = (status: number, body: ErrorBody, headers?: Record<string, string>) => json(status, { error: body }, headers);
  const base = (e: Error) => ({ name: e.name, message: e.message });
  if (err instanceof HttpError) {
    return fail(err.status, { ...base(err), ...(err.extra.issues ? { issues: err.extra.issues } : {}) }, err.extra.headers);
  }
  if (err instanceof InvalidInputError) return fail(422, { ...base(err), issues: err.issues });
  if (err instanceof SerializationError) return fail(422, { ...base(err), issues: [{ path: err.path, message: err.reason }] });
  if (err instanceof WaitResolvedError) return fail(409, { ...base(err), decision: err.decision });
  if (err instanceof RunConflictError || err instanceof RunFinishedError || err instanceof SignalConflictError) return fail(409, base(err));
  if (err instanceof RunNotFoundError || err instanceof UnknownSignalError || err instanceof WaitNotFoundError) return fail(404, base(err));
  if (err instanceof RateLimitedError) return fail(429, base(err), { "retry-after": "1" });
  if (err instanceof UnknownWorkflowError) {
    // The run exists but this deployment does not know its workflow: ours to fix, retry later.
    onFault(err);
    return fail(503, { name: "ServiceUnavailableError", message: "this deployment cannot handle that run's workflow; retry later" }, { "retry-after": "30" });
  }
  onFault(err);
  return fail(500, { name: "InternalError", message: "internal error" });
}
