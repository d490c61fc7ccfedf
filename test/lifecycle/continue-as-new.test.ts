/**
 * Issue 10, item 3: continue-as-new and bounded history, on a real SQLite journal (and the
 * DynamoDB store through the contract suite). A run that loops ends each batch with
 * step.continueAsNew(input): a new incarnation with a journal of its own, the old one kept.
 */
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { createRegistry, durable, Engine, type EngineOptions, JournalLimitError } from "waymark";
import BetterSqlite3 from "better-sqlite3";
import { openLocalDatabase } from "../../lib/local/database.ts";
import { LostResponseStore } from "../support/lost-response-store.ts";
import { type SqliteLab, sqliteLab } from "../support/sqlite-lab.ts";
import { Counter } from "../core/helpers.ts";

let lab: SqliteLab;
afterEach(() => lab?.close());

const keys = new Counter();
const counter = durable(
  { name: "counter", input: z.object({ from: z.number(), to: z.number() }), signals: { note: z.object({ text: z.string() }) } },
  async ({ from, to }, step) => {
    let sum = 0;
    for (let i = from; i < Math.min(from + 5, to); i++) sum += await step.run(`add`, ({ idempotencyKey }) => (keys.hit(idempotencyKey), i));
    if (from + 5 < to) return step.continueAsNew({ from: from + 5, to });
    const note = await step.waitForSignal("note", { timeout: "1s" });
    return { last: sum, note: note.received ? note.payload.text : null };
  },
);

/** Invokes until the run ends (each continueAsNew is one more invocation). */
async function drive(engine: Engine, runId: string, max = 20): Promise<string[]> {
  const outcomes: string[] = [];
  for (let i = 0; i < max; i++) {
    const r = await engine.invoke(runId);
    outcomes.push(r.status);
    if (r.status === "completed" || r.status === "failed") return outcomes;
    if (r.status === "suspended") lab.clock.advance(1_000);
  }
  return outcomes;
}

describe("step.continueAsNew", () => {
  it("runs in incarnations of bounded journals; each keeps its own history and idempotency keys", async () => {
    lab = sqliteLab([counter]);
    await lab.client().start(counter, { runId: "c1", input: { from: 0, to: 12 } });
    const outcomes = await drive(lab.engine("w"), "c1");
    expect(outcomes).toEqual(["continued", "continued", "suspended", "completed"]);
    const run = await lab.store.getRun("c1");
    expect(run).toMatchObject({ status: "completed", incarnation: 3, input: { from: 10, to: 12 }, result: { last: 21, note: null } });
    // Each incarnation's journal holds only its own steps; the first two are kept for inspection.
    const sizes = await Promise.all([1, 2, 3].map(async (k) => (await lab.client().history("c1", { incarnation: k })).entries.filter((e) => e.key.startsWith("step#add")).length));
    expect(sizes).toEqual([5, 5, 2]);
    // The same step name in another incarnation is another operation: its own key.
    expect(keys.calls.filter((k) => k.startsWith("c1"))).toEqual([
      ...["add", "add#2", "add#3", "add#4", "add#5"].map((s) => `c1/${s}`),
      ...["add", "add#2", "add#3", "add#4", "add#5"].map((s) => `c1~2/${s}`),
      ...["add", "add#2"].map((s) => `c1~3/${s}`),
    ]);
  });

  it("a signal nobody consumed moves to the next incarnation", async () => {
    lab = sqliteLab([counter]);
    await lab.client().start(counter, { runId: "c2", input: { from: 0, to: 7 } });
    expect(await lab.client().signal("c2", "note", { text: "hello" }, { signalId: "n1" })).toMatchObject({ status: "buffered" });
    expect(await drive(lab.engine("w"), "c2")).toEqual(["continued", "completed"]);
    expect((await lab.store.getRun("c2"))?.result).toEqual({ last: 11, note: "hello" });
  });

  it("a lost answer on the switch (the write applied) is recognised; a crash before it replays the batch without re-running it", async () => {
    lab = sqliteLab([counter]);
    await lab.client().start(counter, { runId: "c3", input: { from: 0, to: 7 } });
    const lossy = new LostResponseStore(lab.store).lose("continueRun", () => true, "retry");
    expect(await lab.engine("w", lossy.store).invoke("c3")).toEqual({ status: "continued", incarnation: 2 });
    expect(lossy.fired).toEqual(["continueRun"]);

    await lab.client().start(counter, { runId: "c4", input: { from: 0, to: 7 } });
    // The process "dies" as it switches: the write never happens; the invocation fails.
    const failing = new Proxy(lab.store, { get: (t, p, r) => (p === "continueRun" ? async () => { throw new Error("killed"); } : Reflect.get(t, p, r)) });
    await expect(lab.engine("w", failing).invoke("c4")).rejects.toThrow("killed");
    lab.clock.advance(6_000);
    expect(await drive(lab.engine("w2"), "c4")).toEqual(["continued", "suspended", "completed"]);
    expect(keys.calls.filter((k) => k === "c4/add")).toHaveLength(1);
  });

  it("an invalid next input is the workflow's own error: the run fails, clearly", async () => {
    const bad = durable({ name: "bad-continue", input: z.object({ n: z.number() }) }, async (_in, step) => step.continueAsNew({ n: "one" as unknown as number }));
    lab = sqliteLab([bad]);
    await lab.client().start(bad, { runId: "c5", input: { n: 1 } });
    expect(await lab.engine("w").invoke("c5")).toMatchObject({ status: "failed", error: { name: "InvalidInputError" } });
  });
});

describe("journal limits", () => {
  it("warns past the threshold and fails the run past the hard limit, naming continueAsNew", async () => {
    const long = durable({ name: "long", input: z.object({}) }, async (_in, step) => {
      for (let i = 0; i < 30; i++) {
        await step.run("tick", () => i);
        await step.sleep("pause", "1s");
      }
      return "done";
    });
    lab = sqliteLab([long]);
    const logs: Array<Record<string, unknown>> = [];
    const opts: Partial<EngineOptions> = { journalLimits: { warnRecords: 10, maxRecords: 20 }, log: (e) => logs.push(e) };
    const engine = new Engine({ store: lab.store, wakes: lab.wakes, clock: lab.clock, workflows: createRegistry([long]), owner: "w", ...opts });
    await lab.client().start(long, { runId: "l1", input: {} });
    let last;
    for (let i = 0; i < 40; i++) {
      last = await engine.invoke("l1");
      if (last.status === "failed") break;
      lab.clock.advance(1_000);
    }
    expect(last).toMatchObject({ status: "failed", error: { name: "JournalLimitError" } });
    expect((last as { error: { message: string } }).error.message).toMatch(/continueAsNew/);
    expect(logs.some((l) => l.event === "journal-large")).toBe(true);
    expect(new JournalLimitError("x", 1, 1, { warnRecords: 1, warnBytes: 1, maxRecords: 1, maxBytes: 1 }).retryable).toBe(false);
  });
});

describe("the SQLite file", () => {
  it("a version 1 journal file opens at version 4: its runs are in their first incarnation, marked due on release by nothing, not children", () => {
    lab = sqliteLab([counter]);
    const file = `${lab.file}.v1`;
    const raw = new BetterSqlite3(file);
    raw.exec(`CREATE TABLE runs (run_id TEXT PRIMARY KEY, workflow TEXT NOT NULL, input TEXT, status TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
      wake_at INTEGER, waiting_for TEXT, lease_token INTEGER NOT NULL, lease_owner TEXT, lease_expires_at INTEGER, invocations INTEGER NOT NULL, result TEXT, error TEXT, finished_at INTEGER)`);
    raw.exec(`CREATE TABLE records (run_id TEXT NOT NULL, key TEXT NOT NULL, body TEXT NOT NULL, late_for TEXT, PRIMARY KEY (run_id, key))`);
    raw.exec(`CREATE TABLE wakes (run_id TEXT NOT NULL, key TEXT NOT NULL, at INTEGER NOT NULL, reason TEXT NOT NULL, visible_at INTEGER NOT NULL, generation INTEGER NOT NULL, PRIMARY KEY (run_id, key))`);
    raw.exec(`CREATE TABLE wake_generation (id INTEGER PRIMARY KEY CHECK (id = 1), value INTEGER NOT NULL)`);
    raw.exec(`INSERT INTO runs VALUES ('old', 'counter', '{"from":0,"to":1}', 'pending', 1, 1, 1, NULL, 0, NULL, NULL, 0, NULL, NULL, NULL)`);
    raw.pragma("user_version = 1");
    raw.close();
    const db = openLocalDatabase(file);
    expect(db.pragma("user_version", { simple: true })).toBe(4);
    expect(db.prepare("SELECT incarnation FROM runs WHERE run_id = 'old'").pluck().get()).toBe(1);
    expect(db.prepare("SELECT due_on_release FROM runs WHERE run_id = 'old'").pluck().get()).toBeNull();
    expect(db.prepare("SELECT child FROM runs WHERE run_id = 'old'").pluck().get()).toBeNull();
    db.close();
  });
});
