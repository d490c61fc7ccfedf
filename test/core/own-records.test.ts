/**
 * Replay does not check the shape of a record the engine wrote itself in this process
 * (`StoredRecord.checked`, set on the engine's appends and kept by the SQLite store with the
 * row). That is sound only if such a record, through JSON and the shape check, comes out as
 * itself: nothing the check would strip, refuse or change. Here every record a varied run
 * appends with the mark is put through `parseRecord` and compared with what went in.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { durable, type StoredRecord } from "waymark";
import { createTestRuntime } from "waymark/testing";
import { parseRecord } from "../../lib/core/records.ts";
import { runIdOfJournal } from "../../lib/core/run/journal-ids.ts";
import { Empty } from "./helpers.ts";

const child = durable({ name: "own-child", input: z.object({ n: z.number() }) }, async ({ n }, step) => step.run("double", () => n * 2));

const varied = durable({ name: "own-varied", input: Empty, signals: { go: z.object({ ok: z.boolean() }) } }, async (_in, step) => {
  const obj = await step.run("object", () => ({ text: "é😀 \u2028", list: [1, null, "x"], nested: { deep: [true] }, empty: {} }));
  const none = await step.run("nothing", () => undefined);
  const flaky = await step.run("flaky", ({ attempt }) => (attempt < 2 ? Promise.reject(new Error("once")) : "ok"), { retries: { attempts: 3, initialDelay: "1s", jitter: 0 } });
  const failed = await step
    .run("fails", () => Promise.reject(new TypeError("no")), { retries: { attempts: 1 } })
    .then(
      () => "unexpected",
      (err: unknown) => (err as Error).name,
    );
  await step.sleep("nap", "1m");
  const got = await step.waitForSignal("go", { timeout: "1h" });
  const missed = await step.waitForSignal("go", { timeout: "1m" });
  const both = await Promise.all([step.run("left", () => 1), step.run("right", () => 2)]);
  const mapped = await step.map("items", [1, 2, 3], async (i, s) => s.run("sq", () => i * i));
  const branches = await step.parallel("pair", { a: (s) => s.run("a", () => "A"), b: (s) => s.run("b", () => "B") });
  const doubled = await step.invoke("kid", child, { input: { n: 21 } });
  return { obj, none, flaky, failed, got: got.received, missed: missed.received, both, mapped, branches, doubled };
});

describe("the records the engine marks as its own", () => {
  it("come out of JSON and the shape check exactly as they went in, every kind a run writes", async () => {
    const rt = createTestRuntime({ workflows: [varied, child] });
    const marked: StoredRecord[] = [];
    const append = rt.store.appendRecord.bind(rt.store);
    rt.store.appendRecord = (journalId, record, probe) => {
      if (record.checked) marked.push({ key: `${journalId}\u0000${record.key}`, body: JSON.parse(JSON.stringify(record.body)) as unknown });
      return append(journalId, record, probe);
    };
    await rt.start(varied, { runId: "v1", input: {} });
    await rt.advance("1s");
    await rt.advance("1m");
    await rt.signal("v1", "go", { ok: true });
    await rt.advance("1m");
    await rt.settle();
    const run = await rt.get("v1");
    expect(run.status).toBe("completed");
    expect(run.result).toMatchObject({ flaky: "ok", failed: "StepFailedError", got: true, missed: false, both: [1, 2], mapped: [1, 4, 9], doubled: 42 });

    for (const m of marked) {
      const [journalId = "", key = ""] = m.key.split("\u0000");
      expect(parseRecord(runIdOfJournal(journalId), key, m.body), key).toEqual(m.body);
    }
    // What the run wrote through the marked path: every kind of record it has.
    const kinds = new Set(marked.map((m) => {
      const b = m.body as { type: string; kind?: string; status?: string };
      return [b.type, b.kind, b.status].filter(Boolean).join(":");
    }));
    expect([...kinds].sort()).toEqual(expect.arrayContaining(["attempt", "resolution", "step:run:failed", "step:run:ok", "step:sleep", "step:wait"]));
  });
});
