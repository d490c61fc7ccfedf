/**
 * Item 14: a client that goes away mid-request is not a server fault. A real socket sends the
 * headers and part of a declared body, then destroys itself: no `console.error`, no fault, and
 * no answer attempted on the dead socket; the server goes on answering. Real dev server over
 * node:http, real SQLite journal. (`console.error` is spied on, not replaced: it is the
 * default fault log, whose silence is the point.)
 */
import { connect } from "node:net";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { createLocalRuntime, startDevServer, type DevServer, type LocalRuntime } from "waymark/local";
import { SECRET, oneApproval, snapshot, tempDir } from "./helpers.ts";
import { until } from "../support/until.ts";

let runtime: LocalRuntime;
let server: DevServer;
const aborts: Array<{ method: string; path: string }> = [];

beforeAll(async () => {
  runtime = createLocalRuntime({ workflows: [oneApproval], file: join(tempDir(), "journal.db"), webhook: { secret: SECRET } });
  runtime.start();
  // The default onFault (console.error) is kept on purpose.
  server = await startDevServer({ runtime, port: 0, secret: SECRET, onClientAbort: (r) => aborts.push(r) });
});

afterAll(async () => {
  await server.close();
  await runtime.close();
});

afterEach(() => {
  vi.restoreAllMocks();
});

/** Opens a raw socket, sends `head` and `partial`, then destroys the socket. */
function sendPartAndVanish(head: string, partial: string): Promise<void> {
  const url = new URL(server.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname, () => {
      socket.write(head + partial, () => {
        // Give the server the headers and the first bytes before the connection dies.
        setImmediate(() => {
          socket.destroy();
          resolve();
        });
      });
    });
    socket.on("error", reject);
  });
}

describe("a client that aborts mid-body (item 14)", () => {
  it("is not logged as a fault and gets no answer written to its dead socket", async () => {
    const errors = vi.spyOn(console, "error");
    await runtime.client.start(oneApproval, { runId: "ab-1", input: { n: 1 } });
    await until("ab-1 to wait", async () => ((await runtime.client.get("ab-1")).status === "suspended" ? true : undefined));
    const before = await snapshot(runtime.client);
    const path = "/runs/ab-1/signals/approval";
    const head = `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 400\r\n\r\n`;
    await sendPartAndVanish(head, '{"payload":{"approved":tr');
    // The server has seen the abort once it reported it, or (before the fix) logged it.
    await until("the server to notice the abort", () => aborts.length > 0 || errors.mock.calls.length > 0);
    expect(errors).not.toHaveBeenCalled();
    expect(aborts).toEqual([{ method: "POST", path }]);
    expect(await snapshot(runtime.client)).toBe(before);
    // And the server still answers.
    expect((await fetch(`${server.url}/nope`)).status).toBe(404);
  });
});
