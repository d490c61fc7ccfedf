/**
 * A transaction cancelled by a conflict or throttling (TransactConflictError, as the DynamoDB
 * store maps TransactionConflict / ThrottlingError reasons) is retried by the step's retry
 * policy, in the same invocation (the step keeps its delivery position), each failed attempt
 * journaled; once the attempts are spent the step fails, recorded once. A memory store that
 * refuses the first N sends stands in for the contention (DynamoDB Local cannot be made to
 * conflict on demand).
 */
import { describe, expect, it } from "vitest";
import { Client, createRegistry, durable, Engine, StepFailedError, TransactConflictError, type StoredRecord, type TransactResult, type TxOp } from "waymark";
import { MemoryJournalStore, MemoryWakeQueue, VirtualClock } from "waymark/testing";
import { z } from "zod";

class ContendedStore extends MemoryJournalStore {
  sends = 0;
  constructor(private readonly conflicts: number) {
    super({ tables: { counters: ["id"] } });
  }
  override async transactRecord(runId: string, record: StoredRecord, ops: readonly TxOp[], requestId: string): Promise<TransactResult> {
    if (++this.sends <= this.conflicts) throw new TransactConflictError("bump", ["TransactionConflict", "None"]);
    return super.transactRecord(runId, record, ops, requestId);
  }
}

async function run(conflicts: number) {
  let bodies = 0;
  const flow = durable({ name: "bump-flow", input: z.object({}) }, async (_input, step) => {
    try {
      const n = await step.transact(
        "bump",
        (tx) => {
          bodies++;
          tx.update({ table: "counters", key: { id: "c" }, update: "ADD hits :one", values: { ":one": 1 } });
          return "bumped";
        },
        { retries: { attempts: 3, initialDelay: "10ms", jitter: 0 } },
      );
      return { n, after: await step.run("after", () => "ran") };
    } catch (err) {
      return { failed: err instanceof StepFailedError ? err.failure.name : String(err) };
    }
  });
  const store = new ContendedStore(conflicts);
  const clock = new VirtualClock();
  const ports = { store, wakes: new MemoryWakeQueue(), clock, workflows: createRegistry([flow]) };
  await new Client(ports).start("bump-flow", { runId: "b", input: {} });
  const result = await new Engine({ ...ports, owner: "a" }).invoke("b");
  const keys = (await store.loadJournal("b"))?.records.map((r) => r.key);
  return { result, keys, bodies, hits: store.tables.get("counters", { id: "c" }), sends: store.sends };
}

describe("step.transact under contention", () => {
  it("a conflict is retried in the same invocation by the step's policy; the writes happen once", async () => {
    const r = await run(2);
    expect(r.result).toEqual({ status: "completed", result: { n: "bumped", after: "ran" } });
    expect(r.keys).toEqual(["attempt#bump#1", "attempt#bump#2", "step#bump", "step#after"]);
    expect(r.sends).toBe(3);
    expect(r.bodies).toBe(3);
    expect(r.hits).toEqual({ id: "c", hits: 1 });
  });

  it("once the attempts are spent, the step fails once with the conflict, nothing written", async () => {
    const r = await run(5);
    expect(r.result).toEqual({ status: "completed", result: { failed: "TransactConflictError" } });
    expect(r.keys).toEqual(["attempt#bump#1", "attempt#bump#2", "step#bump"]);
    expect(r.sends).toBe(3);
    expect(r.hits).toBeUndefined();
  });
});

describe("a store that cannot commit writes with a record", () => {
  it("fails the step once with TransactUnsupportedError and sends nothing", async () => {
    const flow = durable({ name: "plain-flow", input: z.object({}) }, async (_input, step) =>
      step.transact("bump", (tx) => {
        tx.update({ table: "counters", key: { id: "c" }, update: "ADD hits :one", values: { ":one": 1 } });
        return "bumped";
      }),
    );
    const inner = new MemoryJournalStore({ tables: { counters: ["id"] } });
    const store = Object.assign(Object.create(inner) as MemoryJournalStore, { transactRecord: undefined });
    const ports = { store, wakes: new MemoryWakeQueue(), clock: new VirtualClock(), workflows: createRegistry([flow]) };
    await new Client(ports).start("plain-flow", { runId: "p", input: {} });
    const result = await new Engine({ ...ports, owner: "a" }).invoke("p");
    expect(result.status === "failed" ? result.error.name : result.status).toBe("TransactUnsupportedError");
    expect(inner.tables.get("counters", { id: "c" })).toBeUndefined();
    expect((await inner.getRecord("p", "step#bump"))?.body).toMatchObject({ status: "failed", attempts: 1 });
  });
});
