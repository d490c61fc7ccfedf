/** Shared pieces of the webhook tests: a secret, request builders, a journal snapshot, workflows. */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { durable, type Client } from "waymark";
import { signRequest } from "../../lib/http/signing.ts";
import type { HttpRequest } from "../../lib/http/types.ts";
import type { ApprovalLink } from "../../lib/core/definition.ts";
import { createLocalRuntime, startDevServer, type DevServer, type LocalRuntime, type LocalRuntimeOptions } from "waymark/local";

export const SECRET = "test-webhook-secret-0123456789abcdef";
export const OTHER_SECRET = "another-webhook-secret-0123456789abcdef";

export const Approval = z.object({ approved: z.boolean(), approver: z.string().min(1), note: z.string().max(500).optional() });

export function tempDir(prefix = "waymark-http-"): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** A request as a host would build it. */
export function request(method: string, path: string, init: { headers?: Record<string, string>; body?: string } = {}): HttpRequest {
  return { method, path, query: {}, headers: init.headers ?? {}, body: init.body ?? "" };
}

/** A correctly signed JSON request. */
export function signed(method: string, path: string, body: unknown, now: number, secret = SECRET): HttpRequest {
  const text = body === undefined ? "" : typeof body === "string" ? body : JSON.stringify(body);
  return request(method, path, {
    headers: { ...(text ? { "content-type": "application/json" } : {}), ...signRequest(secret, { method, path, body: text }, now) },
    body: text,
  });
}

/** A JSON POST with no signature (approval links). */
export function postJson(path: string, body: unknown): HttpRequest {
  return request("POST", path, { headers: { "content-type": "application/json" }, body: typeof body === "string" ? body : JSON.stringify(body) });
}

/** Everything the store holds: each run's meta and its whole history. Equal snapshots: nothing was written. */
export async function snapshot(client: Client): Promise<string> {
  const { runs } = await client.list({ limit: 1000 });
  const out: unknown[] = [];
  for (const run of runs.sort((a, b) => (a.runId < b.runId ? -1 : 1))) out.push(await client.history(run.runId));
  return JSON.stringify(out);
}

export function parseBody(res: { body: string }): { error?: { name: string; message: string; issues?: Array<{ path: string; message: string }>; decision?: { via: string } } } & Record<string, unknown> {
  return JSON.parse(res.body) as ReturnType<typeof parseBody>;
}

/** Links handed out by `notify`, by run id, newest last. */
export const sentLinks = new Map<string, ApprovalLink[]>();

/** Waits for approval twice (with links), e.g. a first and a second sign-off. */
export const twoApprovals = durable({ name: "two-approvals", input: z.object({}).strict(), signals: { approval: Approval } }, async (_in, step) => {
  const notify = (link: ApprovalLink) => {
    sentLinks.set(link.runId, [...(sentLinks.get(link.runId) ?? []), link]);
  };
  const first = await step.waitForSignal("approval", { timeout: "1h", notify });
  const second = await step.waitForSignal("approval", { timeout: "1h", notify });
  return {
    first: first.received ? first.payload.approver : "timeout",
    second: second.received ? second.payload.approver : "timeout",
  };
});

/** Waits for one approval with a link and a timeout; the race and fuzz subject. */
export const oneApproval = durable({ name: "one-approval", input: z.object({ n: z.number().int() }).strict(), signals: { approval: Approval } }, async (_in, step) => {
  const decision = await step.waitForSignal("approval", { timeout: "24h", notify: (link) => sentLinks.set(link.runId, [link]) });
  return decision.received ? { outcome: decision.payload.approved ? "approved" : "rejected", by: decision.payload.approver } : { outcome: "timed-out" };
});


/**
 * A local runtime on `options.file` with the dev server in front of it (port 0, this file's
 * SECRET), minting links that point at that server. Stop both with {@link stopDevLab}.
 */
export async function startDevLab(options: Omit<LocalRuntimeOptions, "webhook"> & { file: string }): Promise<{ runtime: LocalRuntime; server: DevServer }> {
  let base: string | undefined;
  const runtime = createLocalRuntime({ ...options, webhook: { secret: SECRET, baseUrl: () => base } });
  runtime.start();
  const server = await startDevServer({ runtime, port: 0, secret: SECRET });
  base = server.url;
  return { runtime, server };
}

export async function stopDevLab(lab: { runtime: LocalRuntime; server: DevServer }): Promise<void> {
  await lab.server.close();
  await lab.runtime.close();
}
