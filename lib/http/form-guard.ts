/**
 * Cross-site request forgery guards for HTML forms. A form post must (1) come from a page of
 * this same origin, by the browser's own word (`Sec-Fetch-Site`, else `Origin` against `Host`),
 * and (2) carry a form token only this server can make: for an approval link, an HMAC of the
 * link's token under a key derived from the webhook secret for this purpose only; for the
 * dashboard, a random value of the server's lifetime. Neither adds a credential beside the
 * capability: a form token is derived from (or as secret as) what the poster already holds.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { looksLikeJson, mediaHint } from "./body.ts";
import { HttpError } from "./errors.ts";
import type { HttpRequest } from "./types.ts";

/** The hidden field that carries the form token. */
export const CSRF_FIELD = "_csrf";

/**
 * True when the browser says the request comes from another site. Requests without either
 * header (curl, scripts) are not a browser's cross-site requests: the form token still applies.
 *
 * @example
 * ```ts
 * crossSite({ "sec-fetch-site": "cross-site" }); // true
 * crossSite({ origin: "http://127.0.0.1:8787", host: "127.0.0.1:8787" }); // false
 * ```
 */
export function crossSite(headers: Readonly<Record<string, string | undefined>>): boolean {
  const site = headers["sec-fetch-site"]?.toLowerCase();
  if (site !== undefined) return site !== "same-origin" && site !== "none";
  const origin = headers.origin;
  if (origin === undefined) return false;
  try {
    return new URL(origin).host.toLowerCase() !== (headers.host ?? "").toLowerCase();
  } catch {
    return true; // "null" (a sandboxed or opaque origin) or garbage
  }
}

/** The form token of an approval link: HMAC(HMAC(secret, "waymark-approval-form-v1"), token). */
export function linkFormToken(secret: string, token: string): string {
  const key = createHmac("sha256", secret).update("waymark-approval-form-v1").digest();
  return createHmac("sha256", key).update(token).digest("base64url");
}

/** Equal, in constant time for equal lengths. */
export function sameToken(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * Reads an `application/x-www-form-urlencoded` body after the guards: 415 for another media
 * type or a JSON body sent as a form (`curl -d '{…}'`, with the fix), 403 for a cross-site post
 * or a missing or wrong form token.
 *
 * @example
 * ```ts
 * const form = readGuardedForm(req, (t) => sameToken(t, expected));
 * ```
 */
export function readGuardedForm(req: HttpRequest, tokenOk: (token: string) => boolean): URLSearchParams {
  const media = (req.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase();
  if (media !== "application/x-www-form-urlencoded") throw new HttpError(415, "UnsupportedMediaTypeError", "send the form as application/x-www-form-urlencoded");
  if (looksLikeJson(req.body)) throw new HttpError(415, "UnsupportedMediaTypeError", `send the body as content-type: application/json (UTF-8)${mediaHint(media, req.body)}`);
  if (crossSite(req.headers)) throw new HttpError(403, "ForbiddenError", "this form was posted from another site");
  const form = new URLSearchParams(req.body);
  if (!tokenOk(form.get(CSRF_FIELD) ?? "")) throw new HttpError(403, "ForbiddenError", "this form is out of date or was not made by this server: reload the page and try again");
  return form;
}

/**
 * True when the request body is a form (an HTML page's post) rather than JSON. A JSON body under
 * the form's content type (`curl -d '{…}'` without a content-type) is not a form: it goes the
 * JSON way, and is answered 415 with the fix.
 */
export function isFormPost(req: HttpRequest): boolean {
  return (req.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase() === "application/x-www-form-urlencoded" && !looksLikeJson(req.body);
}
