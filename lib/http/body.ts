/**
 * Reading a request body, in the order that writes nothing and reveals nothing early:
 * size (413), then — after authentication — content type (415) and JSON (400).
 */
import { HttpError } from "./errors.ts";
import type { HttpRequest } from "./types.ts";

/** Default body limit: 64 KiB. */
export const DEFAULT_MAX_BODY_BYTES = 64 * 1024;
/** Deepest nesting accepted: deeper JSON would overflow recursive validators further on. */
export const MAX_JSON_DEPTH = 64;

export function assertBodySize(req: HttpRequest, maxBytes: number): void {
  if (Buffer.byteLength(req.body, "utf8") > maxBytes) {
    throw new HttpError(413, "PayloadTooLargeError", `request body exceeds ${maxBytes} bytes`);
  }
}

/** Parses a JSON body; refuses other media types, broken JSON, deep nesting and `__proto__` keys. */
export function readJsonBody(req: HttpRequest): unknown {
  const type = req.headers["content-type"];
  const [media, ...params] = (type ?? "").split(";").map((p) => p.trim().toLowerCase());
  const charset = params.find((p) => p.startsWith("charset="))?.slice("charset=".length).replace(/"/g, "");
  if (media !== "application/json" || (charset !== undefined && charset !== "utf-8" && charset !== "utf8")) {
    throw new HttpError(415, "UnsupportedMediaTypeError", `send the body as content-type: application/json (UTF-8)${mediaHint(media, req.body)}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(req.body);
  } catch {
    throw new HttpError(400, "MalformedJsonError", "the body is not valid JSON");
  }
  checkShape(value);
  return value;
}

/**
 * True when a body reads as JSON (an object or array) whatever its content type says: a urlencoded
 * form never starts with `{` or `[`, which browsers send as `%7B` and `%5B`.
 */
export function looksLikeJson(body: string): boolean {
  const first = body.trimStart()[0];
  return first === "{" || first === "[";
}

/** What the caller most likely did, for a JSON body under another (or no) content type. */
export function mediaHint(media: string | undefined, body: string): string {
  if (!looksLikeJson(body)) return "";
  const fix = "add -H 'content-type: application/json' (curl), or set the header in your HTTP client";
  if (media === undefined || media === "") return `: this JSON body came without a content-type header; ${fix}`;
  if (media === "application/x-www-form-urlencoded") return `: this JSON body came as ${media}, which is what curl -d sends unless told otherwise; ${fix}`;
  return `: this JSON body came as ${media}; ${fix}`;
}

function checkShape(root: unknown): void {
  const stack: Array<[unknown, number]> = [[root, 1]];
  while (stack.length > 0) {
    const [value, depth] = stack.pop() as [unknown, number];
    if (value === null || typeof value !== "object") continue;
    if (depth > MAX_JSON_DEPTH) throw new HttpError(400, "MalformedJsonError", `the body nests deeper than ${MAX_JSON_DEPTH} levels`);
    if (Array.isArray(value)) {
      for (const item of value) stack.push([item, depth + 1]);
      continue;
    }
    for (const [k, v] of Object.entries(value)) {
      if (k === "__proto__") throw new HttpError(400, "MalformedJsonError", 'the body has a "__proto__" key');
      stack.push([v, depth + 1]);
    }
  }
}
