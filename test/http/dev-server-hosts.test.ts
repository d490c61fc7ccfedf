/**
 * Item 13: the dev server checks the Host header on every bind address, not only on exactly
 * 127.0.0.1 / localhost / ::1. Bound to 127.0.0.2 or to 0.0.0.0, a page that rebinds its own
 * DNS name to this machine must not get the dashboard or the routes. Real servers over
 * node:http, a real SQLite journal.
 */
import { request as httpRequest } from "node:http";
import { networkInterfaces } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLocalRuntime, startDevServer, type DevServer, type LocalRuntime } from "waymark/local";
import { SECRET, oneApproval, tempDir } from "./helpers.ts";

let runtime: LocalRuntime;
const servers: DevServer[] = [];

beforeAll(() => {
  runtime = createLocalRuntime({ workflows: [oneApproval], file: join(tempDir(), "journal.db"), webhook: { secret: SECRET } });
});

afterAll(async () => {
  for (const s of servers) await s.close();
  await runtime.close();
});

async function serve(host: string, allowedHosts?: string[]): Promise<number> {
  const server = await startDevServer({ runtime, port: 0, host, secret: SECRET, ...(allowedHosts ? { allowedHosts } : {}) });
  servers.push(server);
  // The URL it reports is one it answers to (approval links are built from it).
  expect((await fetch(`${server.url}/`)).status).toBe(200);
  return Number(new URL(server.url).port);
}

/** GET `/` at `address:port` with the given Host header: the status. */
function statusFor(address: string, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: address, port, path: "/", headers: { host } }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("the dev server's Host check (item 13)", () => {
  it("bound to 127.0.0.2: answers to that address and localhost names, refuses a foreign Host", async () => {
    const port = await serve("127.0.0.2");
    expect(await statusFor("127.0.0.2", port, "attacker.example")).toBe(403);
    expect(await statusFor("127.0.0.2", port, `attacker.example:${port}`)).toBe(403);
    expect(await statusFor("127.0.0.2", port, `127.0.0.2:${port}`)).toBe(200);
    expect(await statusFor("127.0.0.2", port, `LOCALHOST.:${port}`)).toBe(200);
  });

  it("bound to 0.0.0.0: answers to the machine's interface addresses, localhost and allowedHosts only", async () => {
    const port = await serve("0.0.0.0", ["devbox.test"]);
    expect(await statusFor("127.0.0.1", port, "attacker.example")).toBe(403);
    expect(await statusFor("127.0.0.1", port, `0.0.0.0:${port}`)).toBe(403);
    expect(await statusFor("127.0.0.1", port, `localhost:${port}`)).toBe(200);
    expect(await statusFor("127.0.0.1", port, `devbox.test:${port}`)).toBe(200);
    expect(await statusFor("127.0.0.1", port, `[::1]:${port}`)).toBe(200);
    const lan = Object.values(networkInterfaces()).flatMap((l) => l ?? []).find((a) => a.family === "IPv4" && !a.internal)?.address ?? "127.0.0.1";
    expect(await statusFor(lan, port, `${lan}:${port}`)).toBe(200);
  });

  it("bound to the default 127.0.0.1: as before, and allowedHosts adds names", async () => {
    const port = await serve("127.0.0.1", ["app.localtest"]);
    expect(await statusFor("127.0.0.1", port, "attacker.example")).toBe(403);
    expect(await statusFor("127.0.0.1", port, "192.0.2.2")).toBe(403);
    expect(await statusFor("127.0.0.1", port, `app.localtest:${port}`)).toBe(200);
  });
});
