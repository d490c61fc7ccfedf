/**
 * Issue 20 item 4, wake now: a run's current sleep ends early — journaled as the sleep's
 * resolution (`woken`), so every replay agrees — through `client.wake`, `waymark runs wake` and
 * the dashboard's button, on the testing and local runtimes (and a deployed table: the CLI's
 * `--table` goes through the same client).
 */
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { durable, RunFinishedError } from "waymark";
import { createTestRuntime, replayHistories } from "waymark/testing";
import { createLocalRuntime, type LocalRuntime } from "waymark/local";
import { main } from "../../lib/cli/main.ts";
import { createDashboard } from "../../lib/local/dashboard.ts";
import { tempDir } from "../http/helpers.ts";
import { PausingStore } from "../support/pausing-store.ts";
import { type SqliteLab, sqliteLab } from "../support/sqlite-lab.ts";
import { until } from "../support/until.ts";

const coolOff = durable({ name: "cool-off", input: z.object({}) }, async (_in, step) => {
  const charged = await step.run("charge", () => "ch_1");
  await step.sleep("cool-off", "1h");
  return step.run("ship", () => `${charged}:shipped`);
});

let lab: SqliteLab | undefined;
let local: LocalRuntime | undefined;
afterEach(async () => {
  lab?.close();
  lab = undefined;
  await local?.close();
  local = undefined;
});

describe("wake now", () => {
  it("ends the sleep at once, journaled as woken; replay agrees; a run not asleep, or over, is told so", async () => {
    const rt = createTestRuntime({ workflows: [coolOff] });
    await rt.start(coolOff, { runId: "w1", input: {} });
    expect(await rt.get("w1")).toMatchObject({ status: "suspended", waitingFor: "sleep:cool-off" });
    expect(await rt.client.wake("w1")).toEqual({ woken: ["cool-off"] });
    await rt.settle();
    expect(await rt.get("w1")).toMatchObject({ status: "completed", result: "ch_1:shipped" });
    const history = await rt.client.history("w1");
    expect(history.entries.find((e) => e.key === "resolution#cool-off")?.record).toMatchObject({ type: "resolution", via: "woken" });
    const [report] = await replayHistories({ workflows: [coolOff], histories: [{ run: history.run, records: (await rt.store.loadJournal("w1"))?.records ?? [] }] });
    expect(report).toMatchObject({ ok: true, reached: "completed" });
    await expect(rt.client.wake("w1")).rejects.toBeInstanceOf(RunFinishedError);
    const waits = durable({ name: "waits", input: z.object({}), signals: { go: z.object({}) } }, async (_in, step) => step.waitForSignal("go"));
    const rt2 = createTestRuntime({ workflows: [waits] });
    await rt2.start(waits, { runId: "w2", input: {} });
    expect(await rt2.client.wake("w2")).toEqual({ woken: [] });
  });

  it("a wake-now while an invocation is writing the sleep (its wake found the run busy) still wakes it after the release", async () => {
    lab = sqliteLab([coolOff]);
    const pausing = new PausingStore(lab.store);
    await lab.client().start(coolOff, { runId: "w3", input: {} });
    // Hold the invocation just before its release: the sleep is recorded, the lease still held.
    const held = pausing.hold("releaseLease", "before");
    const invocation = lab.engine("W", pausing.store).invoke("w3");
    await held.reached;
    expect(await lab.client().wake("w3")).toEqual({ woken: ["cool-off"] });
    const before = lab.scheduled.length;
    held.release();
    expect(await invocation).toMatchObject({ status: "suspended" });
    // After the release it looked again, found the sleep over, and woke the run now.
    expect(lab.scheduled.slice(before).some((w) => w.at <= lab!.clock.now() && w.runId === "w3")).toBe(true);
    expect(await lab.engine("W2").invoke("w3")).toEqual({ status: "completed", result: "ch_1:shipped" });
  });

  it("a wake-now that died after its resolution and before its mark is completed by the next call", async () => {
    lab = sqliteLab([coolOff]);
    await lab.client().start(coolOff, { runId: "w4", input: {} });
    expect(await lab.engine("W").invoke("w4")).toMatchObject({ status: "suspended" });
    const asleep = await lab.store.getRun("w4");
    expect(asleep).toMatchObject({ waitingFor: "sleep:cool-off" });
    // The first call writes the sleep's resolution, then dies before its mark (and its wake).
    const pausing = new PausingStore(lab.store);
    const marking = pausing.hold("markDue", "before", (args) => args[0] === "w4");
    const first = lab.client(pausing.store).wake("w4");
    await marking.reached;
    marking.fail(new Error("the caller died"));
    await expect(first).rejects.toThrow("the caller died");
    expect((await lab.store.getRun("w4"))?.wakeAt).toBe(asleep?.wakeAt); // not due: an hour away
    // Its retry finds the sleep woken and the run still asleep at it, not due: marks and wakes it.
    const before = lab.scheduled.length;
    expect(await lab.client().wake("w4")).toEqual({ woken: ["cool-off"] });
    expect((await lab.store.getRun("w4"))?.wakeAt).toBeLessThanOrEqual(lab.clock.now());
    expect(lab.scheduled.slice(before).some((w) => w.runId === "w4" && w.at <= lab!.clock.now())).toBe(true);
    expect(await lab.engine("W2").invoke("w4")).toEqual({ status: "completed", result: "ch_1:shipped" });
    // Once the run has gone past it, the woken sleep is nothing to wake.
    await expect(lab.client().wake("w4")).rejects.toBeInstanceOf(RunFinishedError);
  });

  it("`waymark runs wake` and the dashboard's button, on a local journal", async () => {
    const file = join(tempDir(), "journal.db");
    local = createLocalRuntime({ workflows: [coolOff], file });
    await local.start();
    for (const runId of ["cli", "ui"]) {
      await local.client.start(coolOff, { runId, input: {} });
      await until(`${runId} to sleep`, async () => (await local!.client.get(runId)).waitingFor === "sleep:cool-off");
    }
    const out: string[] = [];
    const err: string[] = [];
    expect(await main(["runs", "wake", "cli", "--file", file], (l) => out.push(l), (l) => err.push(l))).toBe(0);
    expect(JSON.parse(out[0] ?? "{}")).toEqual({ runId: "cli", woken: ["cool-off"] });
    expect((await local.waitForRun("cli", { timeoutMs: 120_000 })).status).toBe("completed");
    expect(await main(["runs", "wake", "cli", "--file", file], () => {}, (l) => err.push(l))).toBe(1);
    expect(err.join("\n")).toMatch(/finished|over|completed/);

    const dashboard = createDashboard({ client: local.client });
    const page = (await dashboard({ method: "GET", path: "/ui/runs/ui", query: {}, headers: {}, body: "" }))!;
    expect(page.body).toContain("Wake now");
    const token = /name="_csrf" value="([^"]+)"/.exec(page.body)?.[1] ?? "";
    const posted = (await dashboard({ method: "POST", path: "/ui/runs/ui/wake", query: {}, headers: { "content-type": "application/x-www-form-urlencoded", host: "127.0.0.1:8787", "sec-fetch-site": "same-origin" }, body: `_csrf=${token}` }))!;
    expect(posted.status).toBe(303);
    expect((await local.waitForRun("ui", { timeoutMs: 120_000 })).status).toBe("completed");
  });
});
