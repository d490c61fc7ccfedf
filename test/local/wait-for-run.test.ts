/**
 * `LocalRuntime.waitForRun`: it looks at the run again as soon as an invocation of it in this
 * runtime ends, not at its next poll; and it still sees an end made elsewhere (another worker on
 * the journal), by polling.
 */
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { durable } from "waymark";
import { createLocalRuntime, type LocalRuntime } from "waymark/local";
import { tempDir } from "../http/helpers.ts";
import { until } from "../support/until.ts";

const gates = new Map<string, () => void>();
const gated = durable({ name: "wait-gated", input: z.object({ id: z.string() }) }, async ({ id }, step) => {
  const held = await step.run("held", () => new Promise<string>((resolve) => gates.set(id, () => resolve(id))));
  return step.run("after", () => `${held} done`);
});

const runtimes: LocalRuntime[] = [];
afterEach(async () => {
  vi.useRealTimers();
  for (const release of gates.values()) release();
  gates.clear();
  for (const rt of runtimes.splice(0)) await rt.close();
});

/** Lets every callback already queued run: microtasks, and one turn of the event loop. */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("waitForRun", () => {
  it("answers once the run's invocation here ends, with no poll timer firing", async () => {
    const ended: string[] = [];
    const rt = createLocalRuntime({ workflows: [gated], file: join(tempDir("wait-for-run-"), "j.db"), tracing: false, onInvocation: (runId) => ended.push(runId) });
    runtimes.push(rt);
    await rt.start();
    await rt.client.start(gated, { runId: "g", input: { id: "g" } });
    await until("the run in its step", () => gates.has("g"));
    // From here no timer fires: a waitForRun that only polls would never answer.
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    let answered: unknown;
    const waiting = rt.waitForRun("g").then((run) => (answered = run));
    await turn();
    expect(answered).toBeUndefined();
    gates.get("g")!();
    while (!ended.includes("g")) await turn();
    await turn();
    expect(answered).toMatchObject({ runId: "g", status: "completed", result: "g done" });
    await waiting;
  });

  it("sees an end made by another worker on the journal, by polling", async () => {
    const file = join(tempDir("wait-for-run-"), "j.db");
    // Not started: it never invokes the run; the worker below does.
    const watcher = createLocalRuntime({ workflows: [gated], file, tracing: false });
    const worker = createLocalRuntime({ workflows: [gated], file, tracing: false });
    runtimes.push(watcher, worker);
    await watcher.client.start(gated, { runId: "w", input: { id: "w" } });
    const waiting = watcher.waitForRun("w");
    await worker.start();
    await until("the run in its step", () => gates.has("w"));
    gates.get("w")!();
    expect(await waiting).toMatchObject({ runId: "w", status: "completed", result: "w done" });
  });
});
