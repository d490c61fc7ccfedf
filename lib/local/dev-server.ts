/**
 * The local dev server: the webhook routes (the same handler as the Lambda Function URL) and the
 * dashboard (`/` and `/ui/…`, see dashboard.ts), on 127.0.0.1 by default. Bodies are limited while they are
 * read, so an oversized upload is refused without being buffered. Only requests whose `Host`
 * names this server are answered (see served-hosts.ts), whatever the bind address.
 */
import { type IncomingMessage, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { Client } from "../client.ts";
import { DEFAULT_MAX_BODY_BYTES } from "../http/body.ts";
import { json } from "../http/errors.ts";
import { createHttpHandler, type HttpHandlerOptions } from "../http/handler.ts";
import type { WebhookSecret } from "../http/secret.ts";
import type { HttpRequest, HttpResponse } from "../http/types.ts";
import type { ApprovalLinks } from "../ports.ts";
import { createDashboard } from "./dashboard.ts";
import { servedHosts } from "./served-hosts.ts";

/**
 * Options of `startDevServer`: the runtime it serves, where it listens, which hosts it answers,
 * and the webhook secret.
 */
export interface DevServerOptions {
  /** A local runtime (or anything with its client) whose runs the server serves. */
  runtime: { client: Client };
  /** Default 8787; 0 picks a free port. */
  port?: number;
  /**
   * Default 127.0.0.1. Binding anything else exposes the routes beyond this machine. Requests
   * are answered only when their `Host` is the bind address, a localhost name, one of this
   * machine's interface addresses (when bound to `0.0.0.0` or `::`), or in `allowedHosts`.
   */
  host?: string;
  /**
   * More `Host` names to answer to, e.g. the machine's DNS name when bound to `0.0.0.0`
   * (`["devbox.lan"]`). Exact names, ports ignored.
   */
  allowedHosts?: readonly string[];
  /** The same secret as the runtime's `webhook.secret`, or its approval links will not verify. */
  secret: WebhookSecret;
  maxBodyBytes?: number;
  /** Adds approval URLs to `GET /runs/:runId` (pass the runtime's links options through `createApprovalLinks`). */
  links?: ApprovalLinks;
  onFault?: HttpHandlerOptions["onFault"];
  /** Shown in the dashboard's header: where the journal lives. */
  source?: string;
  /**
   * Sees requests whose client went away before the answer (a closed tab, a killed curl). Not a
   * fault: nothing is logged and nothing is written back. Default: ignored.
   */
  onClientAbort?: (req: { method: string; path: string }) => void;
}

/** A running dev server: its URL, and `close()`. */
export interface DevServer {
  /**
   * e.g. `http://127.0.0.1:8787`, no trailing slash. Bound to a wildcard (`0.0.0.0`, `::`), the
   * loopback address of that family: a wildcard is not a name the server answers to.
   */
  url: string;
  close(): Promise<void>;
}

/** The dev server's port unless told otherwise: 8787. */
export const DEFAULT_DEV_PORT = 8787;
/** What an oversized upload may still send (discarded) before the connection is cut. */
const DISCARD_LIMIT = 1024 * 1024;

/**
 * Starts the dev server.
 *
 * @example
 * ```ts
 * const secret = process.env.WAYMARK_WEBHOOK_SECRET!;
 * let base: string | undefined;
 * const runtime = createLocalRuntime({ workflows: [orderFlow], webhook: { secret, baseUrl: () => base } });
 * runtime.start();
 * const server = await startDevServer({ runtime, secret, port: 8787 });
 * base = server.url; // approval links now read http://127.0.0.1:8787/approvals/<token>
 * ```
 */
export async function startDevServer(options: DevServerOptions): Promise<DevServer> {
  const host = options.host ?? "127.0.0.1";
  const maxBody = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const onFault = options.onFault ?? ((err: unknown) => console.error("waymark dev server: server fault:", err));
  const handler = createHttpHandler({
    client: options.runtime.client,
    secret: options.secret,
    maxBodyBytes: maxBody,
    onFault,
    ...(options.links ? { links: options.links } : {}),
  });
  const served = servedHosts(host, options.allowedHosts);
  const onClientAbort = options.onClientAbort ?? (() => {});
  const dashboard = createDashboard({ client: options.runtime.client, ...(options.links ? { links: options.links } : {}), ...(options.source ? { source: options.source } : {}) });

  const server = createServer((req, res) => {
    // The client went away: not our fault, and there is no one left to answer.
    // (`req.destroyed` is no sign: a request is destroyed once its body has been read.)
    const gone = () => res.destroyed;
    const aborted = () => onClientAbort({ method: req.method ?? "", path: (req.url ?? "/").split("?")[0] ?? "/" });
    const send = (out: HttpResponse): void => {
      if (res.headersSent) return;
      if (gone()) return aborted();
      res.writeHead(out.status, out.headers);
      res.end(out.body);
    };
    // A page on another site must not reach this server by rebinding its DNS name.
    if (!served(req.headers.host)) {
      return send(json(403, { error: { name: "ForbiddenHostError", message: "this dev server does not answer to that Host name (see the allowedHosts option)" } }));
    }
    readBody(req, maxBody).then(
      async (body) => {
        if (body === ABORTED) return aborted();
        if (body === undefined) {
          return send(json(413, { error: { name: "PayloadTooLargeError", message: `request body exceeds ${maxBody} bytes` } }, { connection: "close" }));
        }
        const request = toHttpRequest(req, body);
        send((await dashboard(request)) ?? (await handler(request)));
      },
    ).catch((err: unknown) => {
      onFault(err);
      send(json(500, { error: { name: "InternalError", message: "internal error" } }));
    });
  });
  server.requestTimeout = 30_000;
  server.headersTimeout = 10_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? DEFAULT_DEV_PORT, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: urlOf(host, port),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function urlOf(host: string, port: number): string {
  const reachable = host === "0.0.0.0" || host === "" ? "127.0.0.1" : host === "::" ? "::1" : host;
  return `http://${reachable.includes(":") ? `[${reachable}]` : reachable}:${port}`;
}

/** What reading a body gives when its client went away mid-upload. */
const ABORTED = Symbol("aborted");

/**
 * The body as UTF-8, `undefined` once it passes `max` bytes (the rest is discarded, up to a
 * cap), or {@link ABORTED} when the stream fails: a request's stream fails only on its client's
 * side (a reset, a half-sent body), never because of us.
 */
function readBody(req: IncomingMessage, max: number): Promise<string | undefined | typeof ABORTED> {
  return new Promise((resolve) => {
    const declared = Number(req.headers["content-length"] ?? 0);
    const chunks: Buffer[] = [];
    let size = 0;
    let over = declared > max;
    if (over) resolve(undefined);
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (over) {
        if (size > max + DISCARD_LIMIT) req.destroy();
        return;
      }
      if (size > max) {
        over = true;
        chunks.length = 0;
        resolve(undefined);
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => resolve(over ? undefined : Buffer.concat(chunks).toString("utf8")));
    req.on("error", () => resolve(ABORTED));
  });
}

function toHttpRequest(req: IncomingMessage, body: string): HttpRequest {
  const raw = req.url ?? "/";
  const q = raw.indexOf("?");
  // fromEntries defines own properties, so a "__proto__" name is just a name.
  const headers: Record<string, string> = Object.fromEntries(
    Object.entries(req.headers).flatMap(([name, value]) => (value === undefined ? [] : [[name, Array.isArray(value) ? value.join(", ") : value]])),
  );
  const query: Record<string, string> = q >= 0 ? Object.fromEntries(new URLSearchParams(raw.slice(q + 1))) : {};
  return { method: req.method ?? "GET", path: q >= 0 ? raw.slice(0, q) : raw, query, headers, body };
}
