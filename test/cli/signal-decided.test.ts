/**
 * Issue 20 item 8: `waymark runs signal` to a wait that was already decided answered `buffered`
 * with exit 0. It now sends nothing and exits 1 with the decision (as the webhook answers an
 * approval for a decided wait with 409), unless `--buffer` asks for the buffering; a retry of the
 * delivery that decided the wait is still its answer, and a run that has not reached the wait
 * still buffers. And `runs start` of an unknown workflow names the workflows the module hosts.
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLocalRuntime, type LocalRuntime } from "waymark/local";
import { main } from "../../lib/cli/main.ts";
import { tempDir } from "../http/helpers.ts";
import { until } from "../support/until.ts";
import { payout } from "./fixtures/payout.ts";

const dir = tempDir("waymark-cli-decided-");
const file = join(dir, "journal.db");
const module = fileURLToPath(new URL("./fixtures/payout.ts", import.meta.url));
let runtime: LocalRuntime;

async function cli(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(argv, (l) => void out.push(l), (l) => void err.push(l));
  return { code, out: out.join("\n"), err: err.join("\n") };
}
const signal = (runId: string, ...extra: string[]) => cli("runs", "signal", runId, "decision", "--payload", '{"approved":true}', "--workflows", module, "--file", file, ...extra);
const waitingFor = async (runId: string, what: string) => until(`${runId} to wait for ${what}`, async () => (await runtime.client.get(runId)).waitingFor === what);

beforeAll(async () => {
  runtime = createLocalRuntime({ workflows: [payout], file });
  await runtime.start();
});
afterAll(async () => {
  await runtime.close();
});

describe("waymark runs signal to a decided wait", () => {
  it("sends nothing and exits 1 with the decision; a retry of the deciding delivery is still delivered; --buffer buffers", async () => {
    await runtime.client.start(payout, { runId: "d-1", input: {} });
    await waitingFor("d-1", "signal:decision");
    const first = await signal("d-1", "--signal-id", "cli-1");
    expect(first.code).toBe(0);
    expect(JSON.parse(first.out)).toMatchObject({ runId: "d-1", status: "delivered", waitId: "decision" });
    await waitingFor("d-1", "sleep:payout-delay");

    const before = JSON.stringify(await runtime.client.history("d-1"));
    const again = await signal("d-1");
    expect(again.code).toBe(1);
    expect(again.out).toBe("");
    expect(again.err).toContain('WaitResolvedError: wait "decision" of run "d-1" was already resolved by signal cli-1; nothing was sent');
    expect(again.err).toContain("--buffer");
    expect(JSON.stringify(await runtime.client.history("d-1"))).toBe(before);

    // The same delivery again (its answer was lost, say): the same answer as the first time.
    const retry = await signal("d-1", "--signal-id", "cli-1");
    expect(retry.code).toBe(0);
    expect(JSON.parse(retry.out)).toMatchObject({ status: "delivered", waitId: "decision" });

    const buffered = await signal("d-1", "--buffer");
    expect(buffered.code).toBe(0);
    expect(JSON.parse(buffered.out)).toMatchObject({ runId: "d-1", status: "buffered" });
  });

  it("a run that has not reached the wait yet still buffers, exit 0", async () => {
    const idle = join(dir, "idle.db");
    const clientOnly = createLocalRuntime({ workflows: [payout], file: idle }); // not started: nothing runs the run
    try {
      await clientOnly.client.start(payout, { runId: "d-2", input: {} });
      const res = await cli("runs", "signal", "d-2", "decision", "--payload", '{"approved":true}', "--workflows", module, "--file", idle);
      expect(res.code).toBe(0);
      expect(JSON.parse(res.out)).toMatchObject({ runId: "d-2", status: "buffered" });
    } finally {
      await clientOnly.close();
    }
  });
});

describe("waymark runs start of an unknown workflow", () => {
  it("exits 1 and names the workflows hosted", async () => {
    const res = await cli("runs", "start", "payuot", "--run-id", "u-1", "--input", "{}", "--workflows", module, "--file", file);
    expect(res.code).toBe(1);
    expect(res.err).toContain('UnknownWorkflowError: no workflow named "payuot" is registered here; hosted here: payout');
  });
});
