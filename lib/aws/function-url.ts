/**
 * The Function URL transport: a payload-format-2.0 request becomes the neutral HttpRequest the
 * webhook handler takes, and its answer a Function URL response.
 */
import type { HttpHandler, HttpRequest } from "../http/types.ts";
import type { FunctionUrlEvent, FunctionUrlResponse } from "./lambda-types.ts";

/** A Function URL event as the transport-neutral `HttpRequest` the webhook handles. */
export function toHttpRequest(event: FunctionUrlEvent): HttpRequest {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(event.headers ?? {})) if (v !== undefined) headers[k.toLowerCase()] = v;
  const query: Record<string, string> = {};
  for (const [k, v] of Object.entries(event.queryStringParameters ?? {})) if (v !== undefined) query[k] = v;
  const raw = event.body ?? "";
  return {
    method: event.requestContext.http.method,
    path: event.rawPath,
    query,
    headers,
    body: event.isBase64Encoded ? Buffer.from(raw, "base64").toString("utf8") : raw,
  };
}

/** Answers a Function URL request with the webhook handler. */
export async function handleFunctionUrl(handler: HttpHandler, event: FunctionUrlEvent): Promise<FunctionUrlResponse> {
  const res = await handler(toHttpRequest(event));
  return { statusCode: res.status, headers: res.headers, body: res.body };
}
