/**
 * Issue 20 item 8: `waymark signal` without a secret says where the secret is — the dev server's
 * `.waymark/dev-secret`, a deployed stack's secret — and how to name it (the variable,
 * `--secret-env`), and sends nothing.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { runHttpVerb } from "../../lib/cli/http-verbs.ts";

const saved = process.env.WAYMARK_WEBHOOK_SECRET;
afterEach(() => {
  if (saved === undefined) delete process.env.WAYMARK_WEBHOOK_SECRET;
  else process.env.WAYMARK_WEBHOOK_SECRET = saved;
});

async function signal(args: string[]): Promise<{ code: number; err: string; requests: number }> {
  let requests = 0;
  const server = createServer((_req, res) => {
    requests++;
    res.end("{}");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const err: string[] = [];
  try {
    const code = await runHttpVerb(["signal", "order-1", "approval", "--payload", '{"approved":true}', "--url", url, ...args], () => {}, (l) => void err.push(l));
    return { code, err: err.join("\n"), requests };
  } finally {
    server.close();
  }
}

describe("waymark signal without a webhook secret", () => {
  it("names .waymark/dev-secret, the variable and --secret-env, exits 2 and sends nothing", async () => {
    delete process.env.WAYMARK_WEBHOOK_SECRET;
    const res = await signal([]);
    expect(res.code).toBe(2);
    expect(res.requests).toBe(0);
    expect(res.err).toContain("$WAYMARK_WEBHOOK_SECRET is not set");
    expect(res.err).toContain("export WAYMARK_WEBHOOK_SECRET=$(cat .waymark/dev-secret)");
    expect(res.err).toContain("--secret-env VAR");
    expect(res.err).toContain("WebhookSecretArn");
  });

  it("with --secret-env, names that variable", async () => {
    const res = await signal(["--secret-env", "MY_SECRET"]);
    expect(res.code).toBe(2);
    expect(res.err).toContain("$MY_SECRET is not set");
    expect(res.err).toContain("export MY_SECRET=$(cat .waymark/dev-secret)");
  });

  it("with the secret set, the request is sent, signed", async () => {
    process.env.WAYMARK_WEBHOOK_SECRET = "a".repeat(64);
    const res = await signal([]);
    expect(res.err).toBe("");
    expect(res.code).toBe(0);
    expect(res.requests).toBe(1);
  });
});
