/**
 * The CLI verbs that speak to a webhook (the local dev server or a deployed Function URL):
 *
 *   waymark signal <runId> <name> --payload '<json>' [--signal-id id] [--wait-id id] [--url base] [--secret-env VAR]
 *   waymark approve <approval-url> --payload '<json>'
 *
 * `signal` signs its request with the secret in $VAR (default WAYMARK_WEBHOOK_SECRET); `approve`
 * needs no secret: the approval URL is the capability.
 */
import { randomUUID } from "node:crypto";
import { parseArgs } from "node:util";
import { signRequest } from "../http/signing.ts";

export const HTTP_USAGE = `  waymark signal <runId> <name> --payload '<json>' [--signal-id id] [--wait-id id] [--url base] [--secret-env VAR]
  waymark approve <approval-url> --payload '<json>'

--url defaults to $WAYMARK_URL; the secret is read from $WAYMARK_WEBHOOK_SECRET unless --secret-env names another variable`;

class CliUsageError extends Error {
  override readonly name = "CliUsageError";
}

/**
 * Runs `waymark signal` or `waymark approve`; returns the exit code (0 ok, 1 refused, 2 usage).
 *
 * @example
 * ```ts
 * await runHttpVerb(["approve", url, "--payload", '{"approved":true,"approver":"ana"}']);
 * ```
 */
export async function runHttpVerb(argv: string[], out: (line: string) => void = console.log, err: (line: string) => void = console.error): Promise<number> {
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        payload: { type: "string" },
        "signal-id": { type: "string" },
        "wait-id": { type: "string" },
        url: { type: "string" },
        "secret-env": { type: "string" },
      },
    });
    const [verb, a, b, ...rest] = positionals;
    if (values.payload === undefined) throw new CliUsageError("--payload '<json>' is required");
    const payload = parseJson(values.payload);
    if (verb === "approve") {
      if (!a || b !== undefined) throw new CliUsageError("approve takes one approval URL");
      const target = parseUrl(a);
      return await send(target, JSON.stringify(payload), {}, out, err);
    }
    if (verb !== "signal" || !a || !b || rest.length > 0) throw new CliUsageError("signal takes <runId> <name>");
    const base = values.url ?? process.env.WAYMARK_URL;
    if (!base) throw new CliUsageError("signal needs --url (or $WAYMARK_URL): the dev server or the Function URL");
    const secretVar = values["secret-env"] ?? "WAYMARK_WEBHOOK_SECRET";
    const secret = process.env[secretVar];
    if (!secret) throw new CliUsageError(missingSecret(secretVar));
    const target = parseUrl(base);
    target.pathname = `${target.pathname.replace(/\/+$/, "")}/runs/${encodeURIComponent(a)}/signals/${encodeURIComponent(b)}`;
    target.search = "";
    // An explicit id: re-running the command with the same --signal-id is one signal.
    const signalId = values["signal-id"] ?? `cli-${randomUUID()}`;
    const body = JSON.stringify({ payload, signalId, ...(values["wait-id"] ? { waitId: values["wait-id"] } : {}) });
    return await send(target, body, signRequest(secret, { method: "POST", path: target.pathname, body }), out, err);
  } catch (e) {
    if (e instanceof CliUsageError || (e as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")) {
      err(`waymark: ${(e as Error).message}\nusage:\n${HTTP_USAGE}`);
      return 2;
    }
    throw e;
  }
}

async function send(url: URL, body: string, headers: Record<string, string>, out: (line: string) => void, err: (line: string) => void): Promise<number> {
  let res: Response;
  try {
    res = await fetch(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body, signal: AbortSignal.timeout(30_000) });
  } catch (e) {
    err(`waymark: cannot reach ${url.origin}: ${(e as Error).message}`);
    return 1;
  }
  const text = await res.text();
  if (res.ok) {
    out(text);
    return 0;
  }
  let detail = text;
  try {
    const parsed = JSON.parse(text) as { error?: { name?: string; message?: string } };
    if (parsed.error) detail = `${parsed.error.name}: ${parsed.error.message}\n${text}`;
  } catch {
    // not JSON: show it as it came
  }
  err(`waymark: HTTP ${res.status} ${detail}`);
  return 1;
}

/** Where the secret is, for the server the user most likely talks to. */
function missingSecret(variable: string): string {
  return [
    `$${variable} is not set: it must hold the webhook secret of the server you signal.`,
    `  waymark dev keeps its secret next to the journal: export ${variable}=$(cat .waymark/dev-secret)   (or <dir of --file>/dev-secret)`,
    "  a deployed function: its secret in Secrets Manager (the stack output …WebhookSecretArn)",
    "  another variable holds it: --secret-env VAR",
  ].join("\n");
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new CliUsageError("--payload is not valid JSON");
  }
}

function parseUrl(text: string): URL {
  try {
    const url = new URL(text);
    if (url.protocol === "http:" || url.protocol === "https:") return url;
  } catch {
    // fall through
  }
  throw new CliUsageError(`not an http(s) URL: ${text}`);
}
