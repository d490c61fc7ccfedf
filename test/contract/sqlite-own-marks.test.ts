/**
 * The `checked` mark (a record this process's engine wrote, answered from the SQLite store's kept
 * rows, whose shape replay does not check again) must not change what a run does: a record the
 * shape check would refuse is never written as the engine's own, and the mark never leaves the
 * process in an exported history, where another code version's records must still be refused.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { Client, createRegistry, durable, Engine, systemClock, type Workflow } from "../../lib/index.ts";
import { openLocalDatabase } from "../../lib/local/database.ts";
import { SqliteJournalStore } from "../../lib/local/sqlite-store.ts";
import { SqliteWakeTable } from "../../lib/local/wake-table.ts";
import { replayHistories, toHistory, type RunHistory } from "../../lib/testing/index.ts";
import { VirtualClock } from "../../lib/testing/virtual-clock.ts";

const dir = mkdtempSync(join(tmpdir(), "waymark-own-marks-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
function harness(workflow: Workflow<any, any>, clock = systemClock as { now(): number }) {
  const db = openLocalDatabase(join(dir, `m${++files}.db`));
  const ports = { store: new SqliteJournalStore(db), wakes: new SqliteWakeTable(db), clock, workflows: createRegistry([workflow]) };
  return { db, ports, client: new Client(ports), engine: new Engine({ ...ports, owner: `o${files}`, leaseTtlMs: 60_000 }) };
}

describe("the engine's own marks on kept rows", () => {
  it("a failed attempt whose error has a stack that is not a string is journaled readably, so replay from kept rows and from the file agree", async () => {
    const flow = durable({ name: "odd-stack", input: z.object({}) }, async (_in, step) =>
      step.run(
        "boom",
        ({ attempt }) => {
          if (attempt > 1) return "ok";
          const err = new Error("first");
          Object.defineProperty(err, "stack", { value: 42, writable: true });
          throw err;
        },
        { retries: { attempts: 2, initialDelay: "1s", jitter: 0 } },
      ),
    );
    const clock = new VirtualClock(1_000_000);
    const h = harness(flow, clock);
    await h.client.start(flow, { runId: "s", input: {} });
    expect((await h.engine.invoke("s")).status).toBe("suspended");
    clock.advance(2_000);
    // Another connection reads the file: every record checked, as a restarted process would.
    const other = openLocalDatabase(h.db.name);
    const store = new SqliteJournalStore(other);
    const fresh = new Engine({ store, wakes: new SqliteWakeTable(other), clock, workflows: createRegistry([flow]), owner: "fresh", leaseTtlMs: 60_000 });
    expect((await fresh.invoke("s")).status).toBe("completed");
    expect((await store.getRun("s"))?.result).toBe("ok");
    other.close();
    h.db.close();
  });

  it("an exported history carries no mark, and replayHistories refuses another format's records whatever a history says", async () => {
    const flow = durable({ name: "hist", input: z.object({}) }, async (_in, step) => {
      await step.run("a", () => 1);
      await step.sleep("nap", "1h");
      return 2;
    });
    const h = harness(flow);
    await h.client.start(flow, { runId: "h", input: {} });
    await h.engine.invoke("h");
    const journal = (await h.ports.store.loadJournal("h"))!;
    expect(journal.records.some((r) => r.checked)).toBe(true); // answered from the kept rows
    const history = JSON.parse(JSON.stringify(toHistory(journal.run, journal.records))) as RunHistory;
    expect(history.records.every((r) => !("checked" in r))).toBe(true);
    // Another code version's records, even with a mark written into the file by hand.
    for (const r of history.records) {
      (r.body as { v: number }).v = 2;
      r.checked = true;
    }
    const [report] = await replayHistories({ workflows: [flow], histories: [history] });
    expect(report?.ok).toBe(false);
    expect(report?.error?.name).toBe("JournalFormatError");
    h.db.close();
  });
});
