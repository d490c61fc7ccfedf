/**
 * Capability tokens for approval links: `base64url(claims JSON) "." base64url(HMAC-SHA256)`.
 * The HMAC key is derived from the webhook secret for this purpose only
 * (`HMAC(secret, "waymark-approval-v1")`), so a token can never double as a request signature.
 * Tokens are deterministic: the same claims mint the same token on every replay.
 *
 * Claims (format 2): `{ v: 2, runId, waitId, signal, inc, iat, exp, approver? }`. `inc` is the
 * run's `createdAt` (the incarnation: a later run that reuses the id after retention gets other
 * tokens, and the webhook refuses this one for it), `iat` when the wait was recorded, `exp` the
 * sooner of the wait's timeout and `iat` + the maximum lifetime: every link expires. Tokens of
 * the first format (no `v`, no incarnation, possibly no expiry) are refused as `legacy`.
 */
import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import * as z from "../core/shape.ts";
import { type Duration, parseDuration } from "../core/duration.ts";
import type { ApprovalLinks, LinkClaims } from "../ports.ts";
import { type WebhookSecret, secretList } from "./secret.ts";

/** Options of `createApprovalLinks`: the secret, the links' base URL and their longest lifetime. */
export interface ApprovalLinksOptions {
  /** The webhook secret (a list during rotation: the first one mints). */
  secret: WebhookSecret;
  /**
   * Public base URL of the webhook (`https://….lambda-url.eu-west-1.on.aws`, or the dev server's
   * URL); a function when it is known only later (a server on port 0). Without it, links carry
   * a token but no URL.
   */
  baseUrl?: string | (() => string | undefined);
  /**
   * The longest a link lives, counted from when its wait was recorded. Default `"7d"`. A wait's
   * timeout, if sooner, still ends the link first.
   */
  maxLifetime?: Duration;
}

/** Default {@link ApprovalLinksOptions.maxLifetime}: 7 days. */
export const DEFAULT_LINK_LIFETIME_MS = 7 * 86_400_000;

/**
 * Why a token was refused. `legacy`: a genuine token of the first format, which was bound to
 * neither the run's incarnation nor a maximum lifetime.
 */
export type TokenFailure = "malformed" | "bad-signature" | "expired" | "legacy";

/** What verifying an approval token answers: its claims and signal id, or why it is refused. */
export type TokenVerification =
  | { ok: true; claims: LinkClaims; signalId: string }
  | { ok: false; reason: TokenFailure };

/** Longest token accepted (a run id and a wait id of 128 characters each fit easily). */
export const MAX_TOKEN_LENGTH = 2048;

const TOKEN = /^([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]{43})$/;
const Claims = z
  .object({ v: z.literal(2), runId: z.string(), waitId: z.string(), signal: z.string(), inc: z.number(), iat: z.number(), exp: z.number(), approver: z.string().optional() })
  .strict();
const LegacyClaims = z.object({ runId: z.string(), waitId: z.string(), signal: z.string(), exp: z.number().optional() }).strict();

/**
 * Creates the {@link ApprovalLinks} a runtime hands to `waitForSignal({ notify })`.
 *
 * @example
 * ```ts
 * const links = createApprovalLinks({ secret: process.env.WAYMARK_WEBHOOK_SECRET!, baseUrl: "http://127.0.0.1:8787", maxLifetime: "3d" });
 * const { url, expiresAt } = links.mint({ runId: "order-8472", waitId: "approval", signal: "approval", runCreatedAt, issuedAt, approver: "ana" });
 * // http://127.0.0.1:8787/approvals/eyJ2Ijoy…, valid until issuedAt + 3 days
 * ```
 */
export function createApprovalLinks(options: ApprovalLinksOptions): ApprovalLinks {
  const [key] = secretList(options.secret).map(tokenKey);
  const lifetime = options.maxLifetime === undefined ? DEFAULT_LINK_LIFETIME_MS : parseDuration(options.maxLifetime);
  return {
    mint(claims: LinkClaims) {
      const expiresAt = Math.min(claims.issuedAt + lifetime, claims.expiresAt ?? Number.POSITIVE_INFINITY);
      const token = mintToken(key as Buffer, { ...claims, expiresAt });
      const base = typeof options.baseUrl === "function" ? options.baseUrl() : options.baseUrl;
      return { token, url: base === undefined ? undefined : `${base.replace(/\/+$/, "")}/approvals/${token}`, expiresAt };
    },
  };
}

/**
 * Checks a token's signature (constant-time) and expiry. `signalId` is the id a delivery
 * through this token uses, so a retried POST is one signal.
 *
 * @example
 * ```ts
 * const v = verifyApprovalToken(secret, token, Date.now());
 * if (!v.ok) return v.reason === "expired" || v.reason === "legacy" ? gone() : notFound();
 * // …then check v.claims.runCreatedAt against the run's createdAt before delivering.
 * await client.signal(v.claims.runId, v.claims.signal, payload, { waitId: v.claims.waitId, signalId: v.signalId });
 * ```
 */
export function verifyApprovalToken(secret: WebhookSecret, token: string, now: number): TokenVerification {
  if (typeof token !== "string" || token.length > MAX_TOKEN_LENGTH) return { ok: false, reason: "malformed" };
  const match = TOKEN.exec(token);
  const payload = match?.[1];
  const sigText = match?.[2];
  if (payload === undefined || sigText === undefined) return { ok: false, reason: "malformed" };
  const sig = Buffer.from(sigText, "base64url");
  // Only the canonical encoding counts: no second spelling of the same token.
  if (sig.length !== 32 || sig.toString("base64url") !== sigText) return { ok: false, reason: "malformed" };
  let valid = false;
  for (const key of secretList(secret).map(tokenKey)) {
    if (timingSafeEqual(hmac(key, payload), sig)) valid = true;
  }
  if (!valid) return { ok: false, reason: "bad-signature" };
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"));
  } catch {
    return { ok: false, reason: "malformed" };
  }
  const parsed = Claims.safeParse(json);
  if (!parsed.success) return { ok: false, reason: LegacyClaims.safeParse(json).success ? "legacy" : "malformed" };
  const claims = parsed.data;
  if (now >= claims.exp) return { ok: false, reason: "expired" };
  const out: LinkClaims = { runId: claims.runId, waitId: claims.waitId, signal: claims.signal, runCreatedAt: claims.inc, issuedAt: claims.iat, expiresAt: claims.exp };
  if (claims.approver !== undefined) out.approver = claims.approver;
  return { ok: true, claims: out, signalId: `link:${createHash("sha256").update(payload).digest("hex").slice(0, 40)}` };
}

function mintToken(key: Buffer, claims: LinkClaims & { expiresAt: number }): string {
  // Fixed key order: the same claims always give the same text, so the same token.
  const body: z.input<typeof Claims> = { v: 2, runId: claims.runId, waitId: claims.waitId, signal: claims.signal, inc: claims.runCreatedAt, iat: claims.issuedAt, exp: claims.expiresAt };
  if (claims.approver !== undefined) body.approver = claims.approver;
  const payload = Buffer.from(JSON.stringify(body), "utf8").toString("base64url");
  return `${payload}.${hmac(key, payload).toString("base64url")}`;
}

function tokenKey(secret: string): Buffer {
  return createHmac("sha256", secret).update("waymark-approval-v1").digest();
}

function hmac(key: Buffer, text: string): Buffer {
  return createHmac("sha256", key).update(text).digest();
}
