/**
 * HMAC-SHA256 request signing for the system routes (start a run, signal it, read it).
 *
 *   x-waymark-timestamp: <unix seconds>
 *   x-waymark-signature: v1=<hex HMAC-SHA256(secret, `${timestamp}.${METHOD}.${path}.${body}`)>
 *
 * The path is the raw request path without its query string; the body is the raw body text.
 * A timestamp further than the replay window from the server's clock (either way) is refused.
 * No other header is covered, so nothing that decides identity may come from one: a signal's id
 * is the body's `signalId`, and an `Idempotency-Key` header may only repeat it.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { type WebhookSecret, secretList } from "./secret.ts";

/** The header of a signed request's timestamp (epoch seconds). */
export const TIMESTAMP_HEADER = "x-waymark-timestamp";
/** The header of a signed request's signature (`v1=<hex HMAC-SHA256>`). */
export const SIGNATURE_HEADER = "x-waymark-signature";
/** How far a request's timestamp may be from the server's clock, either way. */
export const DEFAULT_REPLAY_WINDOW_MS = 5 * 60_000;

/** The parts of a request a signature covers. */
export interface SignedParts {
  method: string;
  path: string;
  body: string;
}

export type SignatureFailure = "missing" | "malformed" | "stale-timestamp" | "bad-signature";

export type SignatureVerification = { ok: true; signature: string } | { ok: false; reason: SignatureFailure };

/**
 * The headers that sign a request, for clients, the CLI and tests.
 *
 * @example
 * ```ts
 * const body = JSON.stringify({ payload: { approved: true, approver: "ana" } });
 * const path = "/runs/order-8472/signals/approval";
 * await fetch(`${base}${path}`, {
 *   method: "POST",
 *   headers: { "content-type": "application/json", ...signRequest(secret, { method: "POST", path, body }) },
 *   body,
 * });
 * ```
 */
export function signRequest(secret: WebhookSecret, req: SignedParts, now: number = Date.now()): Record<string, string> {
  const [first] = secretList(secret);
  const timestamp = String(Math.floor(now / 1000));
  return { [TIMESTAMP_HEADER]: timestamp, [SIGNATURE_HEADER]: `v1=${mac(first, timestamp, req).toString("hex")}` };
}

/**
 * Checks a request's signature (constant-time) and timestamp window.
 *
 * @example
 * ```ts
 * const v = verifyRequestSignature(secret, req, req.headers, Date.now());
 * if (!v.ok) return unauthorized(v.reason);
 * ```
 */
export function verifyRequestSignature(
  secret: WebhookSecret,
  req: SignedParts,
  headers: Readonly<Record<string, string | undefined>>,
  now: number,
  windowMs: number = DEFAULT_REPLAY_WINDOW_MS,
): SignatureVerification {
  const timestamp = headers[TIMESTAMP_HEADER];
  const header = headers[SIGNATURE_HEADER];
  if (timestamp === undefined || header === undefined) return { ok: false, reason: "missing" };
  const hex = /^v1=([0-9a-fA-F]{64})$/.exec(header.trim())?.[1]?.toLowerCase();
  if (!/^\d{1,12}$/.test(timestamp) || hex === undefined) return { ok: false, reason: "malformed" };
  if (Math.abs(now - Number(timestamp) * 1000) > windowMs) return { ok: false, reason: "stale-timestamp" };
  const given = Buffer.from(hex, "hex");
  let valid = false;
  for (const s of secretList(secret)) if (timingSafeEqual(mac(s, timestamp, req), given)) valid = true;
  return valid ? { ok: true, signature: hex } : { ok: false, reason: "bad-signature" };
}

function mac(secret: string, timestamp: string, req: SignedParts): Buffer {
  return createHmac("sha256", secret).update(`${timestamp}.${req.method.toUpperCase()}.${req.path}.${req.body}`).digest();
}
