import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { Client, createRegistry, Engine } from "waymark";
import { MemoryJournalStore, MemoryWakeQueue, VirtualClock } from "waymark/testing";
import { orderFlow } from "../../functions/order-flow.ts";
import { FakeShop } from "../../functions/services/shop.ts";
import type { GoldenHistory } from "./golden.ts";

function load(file: string): GoldenHistory {
  return JSON.parse(readFileSync(new URL(file, import.meta.url), "utf8")) as GoldenHistory;
}

/** A store holding the recorded journal under a run that is ready to be invoked again. */
async function restore(history: GoldenHistory) {
  const store = new MemoryJournalStore();
  const clock = new VirtualClock(history.run.updatedAt + 1_000);
  const { runId, workflow, input, createdAt } = history.run;
  await store.createRun({ runId, workflow, input, createdAt });
  for (const record of history.records) await store.appendRecord(runId, record);
  const ports = { store, wakes: new MemoryWakeQueue(), clock, workflows: createRegistry([orderFlow]) };
  return { ...ports, engine: new Engine({ ...ports, owner: "golden" }), client: new Client(ports), runId };
}

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "waymark-golden-"));
  process.env.WAYMARK_DEMO_DIR = dir;
});

describe("golden histories: today's code replays journals recorded by earlier runs", () => {
  it("finishes a recorded, completed order run from its journal alone: same result, no step executed", async () => {
    const golden = load("order-flow.shipped.history.json");
    const rt = await restore(golden);
    const result = await rt.engine.invoke(rt.runId);
    expect(result).toEqual({ status: "completed", result: golden.run.result });
    expect(new FakeShop(dir).calls()).toEqual([]);
    expect((await rt.store.loadJournal(rt.runId))?.records).toHaveLength(golden.records.length);
  });

  it("resumes a recorded run that waits for approval, without re-running what it did", async () => {
    const golden = load("order-flow.waiting.history.json");
    const rt = await restore(golden);
    expect(await rt.engine.invoke(rt.runId)).toMatchObject({ status: "suspended", waitingFor: "signal:approval" });
    expect(new FakeShop(dir).calls()).toEqual([]);
    await rt.client.signal(rt.runId, "approval", { approved: true, approver: "ana" });
    expect(await rt.engine.invoke(rt.runId)).toMatchObject({ status: "completed", result: { status: "shipped", approvedBy: "ana" } });
    expect(new FakeShop(dir).calls().map((c) => c.op)).toEqual(["label", "send"]);
  });
});
