/**
 * A zombie's two concurrent appends that land out of order around the holder's load (a
 * "straddle"): the invocation that lost its lease took positions 1 (`a`) and 2 (`b`) and both
 * writes were in flight; `b`'s landed first, the holder loaded the journal (it sees `b` at 2, not
 * `a`), and numbers from 3. `a` lands at 1 afterwards. No later invocation wrote a position at or
 * before 1, so `a` is not late by that rule, and replay delivers it before `b`. The holder must
 * not go on from `b` before it knows where `a` is: it holds `b` back until its own `a` is
 * recorded — then `a` is the holder's, at 3, and the zombie's write of it fails — or it learns
 * that the zombie's landed first, and stops (delivery-order.ts).
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { type AppendResult, Client, createRegistry, durable, Engine, type Step, type StoredRecord } from "waymark";
import { MemoryJournalStore, MemoryWakeQueue, VirtualClock } from "waymark/testing";

const TTL = 30_000;

/** `nested`: the race runs in a `step.parallel` branch, whose scope numbers its positions apart. */
function harness(nested = false) {
  const aBodies: Array<() => void> = [];
  const bBodies: Array<() => void> = [];
  const won: string[] = [];
  const prefix = nested ? "p[x]/" : "";
  const body = async (step: Pick<Step, "run">) => {
    const winner = await Promise.race([
      step.run("a", () => new Promise<string>((resolve) => aBodies.push(() => resolve("a")))),
      step.run("b", () => new Promise<string>((resolve) => bBodies.push(() => resolve("b")))),
    ]);
    return step.run(`won-${winner}`, () => {
      won.push(winner);
      return winner;
    });
  };
  const race = durable({ name: "straddle-race", input: z.object({}) }, async (_in, step) => (nested ? (await step.parallel("p", { x: body })).x : body(step)));
  /** Holds the zombie's append of `step#a` (the first) until released; a later one may meet `fault`. */
  class Straddle extends MemoryJournalStore {
    landZombie: (() => void) | undefined;
    zombieWrite: Promise<AppendResult> | undefined;
    fault: ((apply: () => Promise<AppendResult>) => Promise<AppendResult>) | undefined;
    /** Off: every append goes through (a journal written beforehand). */
    armed = true;
    override appendRecord(journalId: string, record: StoredRecord, probe?: string): Promise<AppendResult> {
      const apply = () => super.appendRecord(journalId, record, probe);
      if (record.key !== `step#${prefix}a` || !this.armed) return apply();
      if (!this.zombieWrite) {
        this.zombieWrite = new Promise<void>((resolve) => (this.landZombie = resolve)).then(apply);
        return this.zombieWrite;
      }
      const fault = this.fault;
      this.fault = undefined;
      return fault ? fault(apply) : apply();
    }
  }
  const store = new Straddle();
  const clock = new VirtualClock();
  const workflows = createRegistry([race]);
  const p = { store, wakes: new MemoryWakeQueue(), clock, workflows, leaseTtlMs: TTL };
  const until = async (check: () => boolean | Promise<boolean>) => {
    while (!(await check())) await new Promise((r) => setTimeout(r, 2));
  };
  const settleDown = async () => {
    for (let i = 0; i < 20; i++) await new Promise((r) => setTimeout(r, 1));
  };
  const record = async (key: string) => (await store.getRecord("s1", key.replace("#", `#${prefix}`)))?.body as { seq?: number; inv?: number } | undefined;
  /** A (invocation 1) ends `a`, then `b`: `a`'s write is held, `b`'s lands at 2. Then A's lease lapses. */
  const zombie = async () => {
    await new Client(p).start(race, { runId: "s1", input: {} });
    const a = new Engine({ ...p, owner: "A" }).invoke("s1");
    await until(() => aBodies.length === 1 && bBodies.length === 1);
    aBodies[0]?.();
    await until(() => store.landZombie !== undefined);
    bBodies[0]?.();
    await until(async () => (await record("step#b"))?.seq === 2);
    clock.advance(TTL + 1);
    return { a };
  };
  /** The run's journal replayed from scratch by a fresh engine, as every later replay would. */
  const replay = async () => {
    const records = (await store.loadJournal("s1"))?.records ?? [];
    const copy = new MemoryJournalStore();
    await copy.createRun({ runId: "s1", workflow: "straddle-race", input: {}, createdAt: 0 });
    for (const r of records) await copy.appendRecord("s1", r);
    const ran = aBodies.length + bBodies.length + won.length;
    const result = await new Engine({ store: copy, wakes: new MemoryWakeQueue(), clock: new VirtualClock(), workflows, owner: "R" }).invoke("s1");
    expect(aBodies.length + bBodies.length + won.length).toBe(ran); // nothing ran again
    return result;
  };
  return { race, store, p, clock, aBodies, bBodies, won, until, settleDown, record, zombie, replay };
}

describe("a zombie's record that lands below one of its own the holder loaded", () => {
  it("is not passed over: the holder waits for its own a, and stops when the zombie's lands first", { timeout: 15_000 }, async () => {
    const h = harness();
    const { a } = await h.zombie();
    // B takes the expired lease and loads: b at 2, nothing at 1. It runs a again, and holds b.
    const holder = new Engine({ ...h.p, owner: "B" }).invoke("s1");
    await h.until(() => h.aBodies.length === 2);
    await h.settleDown();
    expect(await h.record("step#won-b")).toBeUndefined();
    // A's write of a lands at 1; A's code, out of lease, starts nothing more.
    h.store.landZombie?.();
    expect(await a).toEqual({ status: "lost-lease" });
    expect(await h.record("step#a")).toMatchObject({ seq: 1, inv: 1 });
    // B's own body of a ends: A's record is there, so B stops, having gone on from nothing.
    h.aBodies[1]?.();
    expect(await holder).toEqual({ status: "lost-lease" });
    expect(h.won).toEqual([]);

    // Every replay takes the path the journal says: a (at 1) won the race.
    h.clock.advance(TTL + 1);
    expect(await new Engine({ ...h.p, owner: "C" }).invoke("s1")).toEqual({ status: "completed", result: "a" });
    expect(await h.replay()).toEqual({ status: "completed", result: "a" });
  });

  it("holds in a nested scope just the same (its positions are its own)", { timeout: 15_000 }, async () => {
    const h = harness(true);
    const { a } = await h.zombie();
    const holder = new Engine({ ...h.p, owner: "B" }).invoke("s1");
    await h.until(() => h.aBodies.length === 2);
    await h.settleDown();
    expect(await h.record("step#won-b")).toBeUndefined();
    h.store.landZombie?.();
    expect(await a).toEqual({ status: "lost-lease" });
    h.aBodies[1]?.();
    expect(await holder).toEqual({ status: "lost-lease" });
    h.clock.advance(TTL + 1);
    expect(await new Engine({ ...h.p, owner: "C" }).invoke("s1")).toEqual({ status: "completed", result: "a" });
  });

  it("the holder's a recorded first takes a position past b's, and the zombie's write of it fails", { timeout: 15_000 }, async () => {
    const h = harness();
    const { a } = await h.zombie();
    const holder = new Engine({ ...h.p, owner: "B" }).invoke("s1");
    await h.until(() => h.aBodies.length === 2);
    h.aBodies[1]?.();
    // B records a at 3, then delivers b (2) and a (3): b won, as every replay will say.
    expect(await holder).toEqual({ status: "completed", result: "b" });
    expect(await h.record("step#a")).toMatchObject({ seq: 3, inv: 2 });
    h.store.landZombie?.();
    expect(await a).toEqual({ status: "lost-lease" });
    expect(await h.record("step#a")).toMatchObject({ seq: 3, inv: 2 });
    expect(await h.replay()).toEqual({ status: "completed", result: "b" });
  });

  it("two holders in a row both hold b while a's place is open", { timeout: 15_000 }, async () => {
    const h = harness();
    const { a } = await h.zombie();
    const first = new Engine({ ...h.p, owner: "B" }).invoke("s1");
    await h.until(() => h.aBodies.length === 2);
    // B's lease lapses too, with its a still running; C takes over, loads the same hole, holds b.
    h.clock.advance(TTL + 1);
    const second = new Engine({ ...h.p, owner: "C" }).invoke("s1");
    await h.until(() => h.aBodies.length === 3);
    await h.settleDown();
    expect(await h.record("step#won-b")).toBeUndefined();
    h.store.landZombie?.();
    expect(await a).toEqual({ status: "lost-lease" });
    h.aBodies[1]?.();
    h.aBodies[2]?.();
    expect(await first).toEqual({ status: "lost-lease" });
    expect(await second).toEqual({ status: "lost-lease" });
    expect(h.won).toEqual([]);
    h.clock.advance(TTL + 1);
    expect(await new Engine({ ...h.p, owner: "D" }).invoke("s1")).toEqual({ status: "completed", result: "a" });
    expect(await h.replay()).toEqual({ status: "completed", result: "a" });
  });

  it("the holder's write of a whose answer is lost counts once read back: b, then a", { timeout: 15_000 }, async () => {
    const h = harness();
    const { a } = await h.zombie();
    h.store.fault = async (apply) => {
      await apply();
      throw new Error("connection reset");
    };
    const holder = new Engine({ ...h.p, owner: "B" }).invoke("s1");
    await h.until(() => h.aBodies.length === 2);
    h.aBodies[1]?.();
    expect(await holder).toEqual({ status: "completed", result: "b" });
    h.store.landZombie?.();
    expect(await a).toEqual({ status: "lost-lease" });
    expect(await h.replay()).toEqual({ status: "completed", result: "b" });
  });

  it("the holder's write of a that fails while the zombie's lands is read back as the zombie's: the holder stops", { timeout: 15_000 }, async () => {
    const h = harness();
    const { a } = await h.zombie();
    h.store.fault = async () => {
      h.store.landZombie?.();
      await h.store.zombieWrite;
      throw new Error("connection reset");
    };
    const holder = new Engine({ ...h.p, owner: "B" }).invoke("s1");
    await h.until(() => h.aBodies.length === 2);
    h.aBodies[1]?.();
    expect(await holder).toEqual({ status: "lost-lease" });
    expect(await a).toEqual({ status: "lost-lease" });
    expect(h.won).toEqual([]);
    h.clock.advance(TTL + 1);
    expect(await new Engine({ ...h.p, owner: "C" }).invoke("s1")).toEqual({ status: "completed", result: "a" });
  });

  it("replays a journal with a position that never filled as it was written", async () => {
    // Written before holders held: position 1 left empty for good (its write was lost), b at 2,
    // then the holder's won-b at 3 and its a at 4. Replay delivers them in that order, running nothing.
    const h = harness();
    h.store.armed = false;
    await new Client(h.p).start(h.race, { runId: "s1", input: {} });
    const rec = (stepId: string, seq: number, inv: number, result: string) => ({
      key: `step#${stepId}`,
      body: { v: 1, at: seq, inv, type: "step", kind: "run", stepId, status: "ok", result, attempts: 1, startedAt: seq, seq },
    });
    for (const r of [rec("b", 2, 1, "b"), rec("won-b", 3, 2, "b"), rec("a", 4, 2, "a")]) await h.store.appendRecord("s1", r);
    expect(await new Engine({ ...h.p, owner: "E" }).invoke("s1")).toEqual({ status: "completed", result: "b" });
    expect([h.aBodies.length, h.bBodies.length, h.won.length]).toEqual([0, 0, 0]);
  });
});
