/**
 * A "Lambda" killed mid-run: a child process runs the real handler behind the event source loop
 * and is SIGKILLed inside a step, after the step's side effect and before its record. Its
 * message reappears after the visibility timeout (the dead container's lease, 1.5 s, has expired
 * by then), this process's loop finishes the run, and the killed step runs once more with the
 * same idempotency key — the only repetition the design allows. Every other step ran once.
 */
import { until } from "../support/until.ts";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { setTimeout as delay } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { peers } from "./endpoints.ts";
import { type E2e, createE2e } from "./harness.ts";
import type { ChildSpec } from "./lambda-child.ts";
import { e2eWorkflows } from "./workflows.ts";

const childScript = fileURLToPath(new URL("./lambda-child.ts", import.meta.url));
let e2e: E2e;
beforeAll(async () => {
  // Visibility (3 s) > time from receive to kill (< 1 s) + the lease (1.5 s): the redelivered
  // wake finds the dead container's lease expired, as with the construct's settings.
  e2e = await createE2e({ endpoints: peers(), workflows: (ledger) => e2eWorkflows(ledger).all, visibilityTimeoutS: 3, config: { leaseTtlMs: 1_500 } });
});
afterAll(() => e2e.close());


describe("a Lambda killed with SIGKILL mid-run", () => {
  it("the message reappears after its visibility timeout and another container finishes the run; the killed step repeats with its key", async () => {
    const runId = "crash-1";
    await e2e.client.start("steps-flow", { runId, input: { steps: 6, holdMs: 250 } });
    const spec: ChildSpec = { endpoints: peers(), queues: e2e.queues, config: e2e.config, ledgerFile: e2e.ledger.file, clockOffset: e2e.clock.offset };
    const child = spawn(process.execPath, ["--conditions=waymark-source", "--import", "tsx", childScript], {
      env: { ...process.env, WAYMARK_E2E_CHILD: JSON.stringify(spec) },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (d: Buffer) => (output += d.toString()));
    child.stderr.on("data", (d: Buffer) => (output += d.toString()));
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once("exit", (_code, signal) => resolve(signal)));
    try {
      // Kill it the moment the third step's side effect happened (its body then holds 250 ms).
      const victim = `${runId}/work#3`;
      const hit = await until(`the child to execute ${victim}`, () => e2e.ledger.read().find((e) => e.key === victim), 15_000, 5);
      child.kill("SIGKILL");
      expect(await exited, output).toBe("SIGKILL");
      expect(hit.pid).toBe(child.pid);
      expect((await e2e.store.loadJournal(runId))?.records.map((r) => r.key)).toEqual(["step#work", "step#work#2"]);

      await e2e.mapping().runUntil(e2e.finished([runId]), { what: "this process to finish the run" });
    } finally {
      child.kill("SIGKILL");
    }

    const run = await e2e.run(runId);
    expect(run.status).toBe("completed");
    expect(run.result).toEqual({ sum: 21 });
    const executions = e2e.ledger.read();
    expect(Object.fromEntries(e2e.ledger.counts(runId))).toEqual({
      [`${runId}/work`]: 1,
      [`${runId}/work#2`]: 1,
      [`${runId}/work#3`]: 2, // in the gap: executed again, with the same idempotency key
      [`${runId}/work#4`]: 1,
      [`${runId}/work#5`]: 1,
      [`${runId}/work#6`]: 1,
    });
    expect(executions.filter((e) => e.key === `${runId}/work#3`).map((e) => e.pid)).toEqual([child.pid, process.pid]);
    // The wake this process handled was the same message, received a second time.
    const wakes = e2e.lines("wake", runId);
    expect(wakes.map((l) => [l.reason, l.receiveCount, l.outcome])).toEqual([["start", 2, "completed"]]);
  });
});
