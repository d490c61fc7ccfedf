/**
 * The webhook: one transport-neutral handler for the Lambda Function URL and the local dev
 * server. Every request passes the same gates before the client is called, and the client
 * validates again before it writes:
 *
 *   route (404) → method (405 + allow) → size (413) → signature or token (401 / 404 / 410)
 *   → content type (415) → JSON (400) → shape (400) → link's run and approver (410 / 403)
 *   → the client: schema (422), state (404 / 409)
 */
import { createHash } from "node:crypto";
import type { Client } from "../client.ts";
import { RunNotFoundError } from "../core/errors.ts";
import { type ApprovalLinks, type Clock, systemClock } from "../ports.ts";
import { DEFAULT_MAX_BODY_BYTES, assertBodySize, readJsonBody } from "./body.ts";
import { HttpError, errorResponse } from "./errors.ts";
import { approvalPage } from "./approval-page.ts";
import { isFormPost } from "./form-guard.ts";
import { wantsHtml } from "./html.ts";
import { approve, cancelRun, deliverSignal, describeApproval, getRun, startRun, type RouteContext } from "./routes.ts";
import { type WebhookSecret, secretList } from "./secret.ts";
import { DEFAULT_REPLAY_WINDOW_MS, SIGNATURE_HEADER, TIMESTAMP_HEADER, verifyRequestSignature } from "./signing.ts";
import { verifyApprovalToken } from "./tokens.ts";
import type { HttpHandler, HttpRequest, HttpResponse } from "./types.ts";
import { RUN_ID } from "../core/run-id.ts";

/** Options of `createHttpHandler`: the client, the webhook secret, approval links, body and replay limits, and a fault hook. */
export interface HttpHandlerOptions {
  client: Client;
  /** Verifies request signatures and approval tokens (a list during rotation). Use the runtime's webhook secret. */
  secret: WebhookSecret;
  clock?: Clock;
  /** Largest body accepted. Default 64 KiB. */
  maxBodyBytes?: number;
  /** How far a signed request's timestamp may be from `clock`, either way. Default 5 minutes. */
  replayWindowMs?: number;
  /** When given, `GET /runs/:runId` includes each open wait's approval token and URL. */
  links?: ApprovalLinks;
  /** Sees the server's own faults (answered with a generic 500 or 503). Default: `console.error`. */
  onFault?: (err: unknown) => void;
}

type Params = Record<string, string>;
type Action = (req: HttpRequest, params: Params) => Promise<HttpResponse>;
interface Route {
  pattern: string[];
  methods: Partial<Record<"GET" | "POST", Action>>;
}


/**
 * Creates the webhook handler.
 *
 * @example
 * ```ts
 * const handler = createHttpHandler({ client: runtime.client, secret: process.env.WAYMARK_WEBHOOK_SECRET! });
 * const res = await handler({ method: "GET", path: `/approvals/${token}`, query: {}, headers: {}, body: "" });
 * ```
 */
export function createHttpHandler(options: HttpHandlerOptions): HttpHandler {
  const secret = secretList(options.secret);
  const clock = options.clock ?? systemClock;
  const maxBody = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const windowMs = options.replayWindowMs ?? DEFAULT_REPLAY_WINDOW_MS;
  const onFault = options.onFault ?? ((err: unknown) => console.error("waymark webhook: server fault:", err));
  const ctx: RouteContext = { client: options.client, links: options.links };
  // Browsers get the approver's page; API clients the JSON answers, as before.
  const pages = { route: ctx, secrets: secret, now: () => clock.now(), onFault };

  /** The signature of a signed request (throws 401 otherwise). */
  const signed = (req: HttpRequest): string => {
    const v = verifyRequestSignature(secret, { method: req.method, path: req.path, body: req.body }, req.headers, clock.now(), windowMs);
    if (v.ok) return v.signature;
    const why = {
      missing: `sign the request: ${TIMESTAMP_HEADER} and ${SIGNATURE_HEADER} headers are required`,
      malformed: `${SIGNATURE_HEADER} must be "v1=<64 hex>" and ${TIMESTAMP_HEADER} unix seconds`,
      "stale-timestamp": `${TIMESTAMP_HEADER} is outside the ${Math.round(windowMs / 1000)} s replay window`,
      "bad-signature": "the signature does not match",
    }[v.reason];
    throw new HttpError(401, "SignatureError", why, { headers: { "www-authenticate": 'Waymark-HMAC-SHA256 realm="waymark"' } });
  };
  const token = (params: Params) => {
    const v = verifyApprovalToken(secret, params.token ?? "", clock.now());
    if (v.ok) return v;
    // Only a genuine token can be expired, so 410 reveals nothing. A forged or malformed one is
    // 404, not 401: the token is the resource's name, there is no credential to retry with
    // (401 would owe a WWW-Authenticate challenge), and one answer for every bad token tells a
    // prober nothing about which part was wrong.
    if (v.reason === "expired") throw new HttpError(410, "LinkExpiredError", "this approval link has expired");
    if (v.reason === "legacy") throw new HttpError(410, "LinkExpiredError", "this approval link has an old format that is no longer accepted; ask for a new link");
    throw new HttpError(404, "LinkNotFoundError", "no such approval link");
  };
  const runId = (params: Params): string => {
    const id = params.runId ?? "";
    if (!RUN_ID.test(id)) throw new RunNotFoundError(id);
    return id;
  };

  const routes: Route[] = [
    { pattern: ["runs"], methods: { POST: async (req) => (signed(req), startRun(ctx, readJsonBody(req))) } },
    { pattern: ["runs", ":runId"], methods: { GET: async (req, p) => (signed(req), getRun(ctx, runId(p))) } },
    { pattern: ["runs", ":runId", "cancel"], methods: { POST: async (req, p) => (signed(req), cancelRun(ctx, runId(p), req.body === "" ? {} : readJsonBody(req))) } },
    {
      pattern: ["runs", ":runId", "signals", ":name"],
      methods: {
        POST: async (req, p) => {
          signed(req);
          const body = readJsonBody(req);
          // Without a signalId, the same path and body are the same signal: a caller's retry
          // (re-signed with a new timestamp) or a replay must not deliver it twice. Only signed
          // inputs go in: never the timestamp, never an unsigned header.
          const fallbackId = `req:${createHash("sha256").update(`${req.path}\n${req.body}`).digest("hex").slice(0, 40)}`;
          return deliverSignal(ctx, runId(p), p.name ?? "", body, req.headers["idempotency-key"], fallbackId);
        },
      },
    },
    {
      pattern: ["approvals", ":token"],
      methods: {
        GET: async (req, p) => (wantsHtml(req.headers) ? approvalPage(pages, req, p.token ?? "") : describeApproval(ctx, token(p).claims)),
        POST: async (req, p) => {
          if (isFormPost(req)) return approvalPage(pages, req, p.token ?? "");
          const { claims, signalId } = token(p);
          return approve(ctx, claims, signalId, readJsonBody(req));
        },
      },
    },
  ];

  return async (req) => {
    try {
      const found = match(routes, req.path);
      if (!found) throw new HttpError(404, "NotFoundError", "no such route");
      const method = String(req.method).toUpperCase();
      const action = found.route.methods[method as keyof Route["methods"]];
      const allow = Object.keys(found.route.methods).join(", ");
      if (!action) throw new HttpError(405, "MethodNotAllowedError", `use ${allow}`, { headers: { allow } });
      assertBodySize(req, maxBody);
      return await action(req, found.params);
    } catch (err) {
      return errorResponse(err, onFault);
    }
  };
}

function match(routes: Route[], path: string): { route: Route; params: Params } | undefined {
  if (typeof path !== "string" || !path.startsWith("/")) return undefined;
  const segments = path.slice(1).split("/");
  for (const route of routes) {
    if (route.pattern.length !== segments.length) continue;
    const params: Params = {};
    let ok = true;
    route.pattern.forEach((part, i) => {
      const seg = segments[i] ?? "";
      if (!ok) return;
      if (part.startsWith(":")) {
        const value = decode(seg);
        if (value === undefined || value === "") ok = false;
        else params[part.slice(1)] = value;
      } else if (part !== seg) ok = false;
    });
    if (ok) return { route, params };
  }
  return undefined;
}

function decode(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}
