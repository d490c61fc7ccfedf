/**
 * step.transact's semantics, one suite for every store that hosts it (memory, SQLite, DynamoDB
 * Local): the engine and client run for real over the store; only the clock is virtual.
 */
import { describe, expect, it } from "vitest";
import { Client, createRegistry, durable, Engine, type AnyWorkflow, type JournalStore, type TransactStore, type TxItem, type TxKey } from "waymark";
import { MemoryWakeQueue, VirtualClock } from "waymark/testing";
import { LostResponseStore } from "../support/lost-response-store.ts";
import { type Calls, reserveFlow } from "./workflows.ts";
import { z } from "zod";

export interface TransactLab {
  store: JournalStore & TransactStore;
  /** The user's tables' real names (unique on DynamoDB Local). */
  names: { stock: string; ledger: string };
  get(table: string, key: TxKey): Promise<TxItem | undefined>;
  put(table: string, item: TxItem): Promise<void>;
  close(): Promise<void>;
}

/** Wraps a store so that a resend uses a token DynamoDB has never seen: what it does once its 10-minute window has passed. */
function expiredWindow(inner: JournalStore & TransactStore): { store: JournalStore & TransactStore; sends: string[] } {
  const sends: string[] = [];
  const store = Object.create(inner) as JournalStore & TransactStore;
  store.transactRecord = async (journalId, record, ops, requestId) => {
    sends.push(requestId);
    if (sends.length === 1) {
      await inner.transactRecord(journalId, record, ops, requestId); // applied; its answer is lost
      throw Object.assign(new Error("injected: socket hang up after TransactWriteItems was applied"), { name: "TimeoutError" });
    }
    return inner.transactRecord(journalId, record, ops, `${requestId}-after-the-window`);
  };
  return { store, sends };
}

export function transactSuite(label: string, makeLab: () => Promise<TransactLab>, o: { emulated: boolean }): void {
  describe(`step.transact on ${label}`, () => {
    const setup = async (o: { gate?: () => Promise<void>; wrap?: (s: JournalStore & TransactStore) => JournalStore & TransactStore; extra?: AnyWorkflow[] } = {}) => {
      const lab = await makeLab();
      const calls: Calls = { reserve: 0, after: 0 };
      const flow = reserveFlow(calls, lab.names, o.gate);
      const clock = new VirtualClock();
      const store = o.wrap ? o.wrap(lab.store) : lab.store;
      const ports = { store, wakes: new MemoryWakeQueue(), clock, workflows: createRegistry([flow, ...(o.extra ?? [])]) };
      const engine = (owner = "a") => new Engine({ ...ports, owner, leaseTtlMs: 10_000 });
      await lab.put(lab.names.stock, { sku: "A1", available: 5 });
      return { lab, calls, clock, client: new Client(ports), engine, store };
    };
    const ledgerLine = (lab: TransactLab, orderId: string) => lab.get(lab.names.ledger, { pk: orderId, sk: "reserve" });

    it("commits the writes with the record once; a replay returns the result and writes nothing", async () => {
      const { lab, calls, clock, client, engine } = await setup();
      try {
        await client.start("reserve-flow", { runId: "t-1", input: { orderId: "o-1", sku: "A1", qty: 2, nap: "1m" } });
        expect((await engine().invoke("t-1")).status).toBe("suspended");
        expect(await lab.get(lab.names.stock, { sku: "A1" })).toEqual({ sku: "A1", available: 3 });
        expect(await ledgerLine(lab, "o-1")).toEqual({ pk: "o-1", sk: "reserve", qty: 2 });
        clock.advance(61_000);
        const done = await engine("b").invoke("t-1");
        expect(done).toEqual({ status: "completed", result: { line: { reserved: 2 }, after: 1 } });
        expect(calls.reserve).toBe(1);
        expect(await lab.get(lab.names.stock, { sku: "A1" })).toEqual({ sku: "A1", available: 3 });
        const record = (await lab.store.getRecord("t-1", "step#reserve"))?.body as { status: string; semantics: string };
        expect(record).toMatchObject({ status: "ok", semantics: "exactly-once", result: { reserved: 2 } });
      } finally {
        await lab.close();
      }
    });

    it("two invocations of one run at once: the writes happen once, the later one ends lost-lease", async () => {
      let first = true;
      let release = () => {};
      const held = new Promise<void>((r) => (release = r));
      let entered = () => {};
      const inside = new Promise<void>((r) => (entered = r));
      const gate = async () => {
        if (!first) return;
        first = false;
        entered();
        await held; // the first invocation stalls inside the body, past its lease
      };
      const { lab, calls, clock, client, engine } = await setup({ gate });
      try {
        await client.start("reserve-flow", { runId: "t-2", input: { orderId: "o-2", sku: "A1", qty: 1, unguarded: true } });
        const slow = engine("slow").invoke("t-2");
        await inside;
        clock.advance(11_000); // its lease expired: another invocation may take the run
        expect((await engine("fast").invoke("t-2")).status).toBe("completed");
        release();
        expect((await slow).status).toBe("lost-lease");
        expect(calls.reserve).toBe(2);
        expect(await lab.get(lab.names.stock, { sku: "A1" })).toEqual({ sku: "A1", available: 4 });
        expect((await client.get("t-2")).status).toBe("completed");
      } finally {
        await lab.close();
      }
    });

    it("a failed condition: nothing written, the step fails once with TransactConditionFailedError, a replay sends nothing", async () => {
      const { lab, calls, clock, client, engine } = await setup();
      try {
        await client.start("reserve-flow", { runId: "t-3", input: { orderId: "o-3", sku: "A1", qty: 9, nap: "1m" } });
        expect((await engine().invoke("t-3")).status).toBe("suspended");
        expect(await lab.get(lab.names.stock, { sku: "A1" })).toEqual({ sku: "A1", available: 5 });
        expect(await ledgerLine(lab, "o-3")).toBeUndefined();
        const record = (await lab.store.getRecord("t-3", "step#reserve"))?.body as { status: string; error: { name: string; fields: Record<string, unknown> } };
        expect(record.status).toBe("failed");
        expect(record.error.name).toBe("TransactConditionFailedError");
        expect(record.error.fields).toMatchObject({ index: 0, table: lab.names.stock, op: "update", reason: "ConditionalCheckFailed", key: { sku: "A1" } });
        // Stock arrives meanwhile: the recorded failure still stands on replay, nothing is sent.
        await lab.put(lab.names.stock, { sku: "A1", available: 50 });
        clock.advance(61_000);
        const done = await engine("b").invoke("t-3");
        expect(done).toEqual({ status: "completed", result: { line: { status: "out-of-stock", index: 0, table: lab.names.stock }, after: 1 } });
        expect(calls.reserve).toBe(1);
        expect(await lab.get(lab.names.stock, { sku: "A1" })).toEqual({ sku: "A1", available: 50 });
      } finally {
        await lab.close();
      }
    });

    it("a lost response on the transaction: resent with the same request id, written once, completed in the same invocation", async () => {
      let lost: LostResponseStore | undefined;
      const { lab, calls, client, engine } = await setup({ wrap: (s) => (lost = new LostResponseStore(s).lose("transactRecord", () => true, "throw")).store as JournalStore & TransactStore });
      try {
        await client.start("reserve-flow", { runId: "t-4", input: { orderId: "o-4", sku: "A1", qty: 2, unguarded: true } });
        expect((await engine().invoke("t-4")).status).toBe("completed");
        expect(lost?.fired).toEqual(["transactRecord"]);
        expect(calls.reserve).toBe(1);
        expect(await lab.get(lab.names.stock, { sku: "A1" })).toEqual({ sku: "A1", available: 3 });
      } finally {
        await lab.close();
      }
    });

    it("a lost response after the token window (the resend is a new request): the record's condition tells, written once", async () => {
      let sends: string[] = [];
      const { lab, calls, client, engine } = await setup({
        wrap: (s) => {
          const w = expiredWindow(s);
          sends = w.sends;
          return w.store;
        },
      });
      try {
        await client.start("reserve-flow", { runId: "t-5", input: { orderId: "o-5", sku: "A1", qty: 2, unguarded: true } });
        expect((await engine().invoke("t-5")).status).toBe("completed");
        expect(sends).toHaveLength(2);
        expect(calls.reserve).toBe(1);
        expect(await lab.get(lab.names.stock, { sku: "A1" })).toEqual({ sku: "A1", available: 3 });
        expect(await ledgerLine(lab, "o-5")).toEqual({ pk: "o-5", sk: "reserve", qty: 2 });
      } finally {
        await lab.close();
      }
    });

    // DynamoDB itself evaluates the whole language: this refusal is the emulator's only.
    if (o.emulated) it("an expression outside the emulated subset fails the step with UnsupportedExpressionError, nothing written", async () => {
      const sized = durable({ name: "sized-flow", input: z.object({}) }, async (_input, step) =>
        step.transact("sized", (tx) => {
          tx.update({ table: "stock", key: { sku: "A1" }, update: "SET available = :z", condition: "size(sku) > :z", values: { ":z": 0 } });
          return "never";
        }),
      );
      const { lab, client, engine } = await setup({ extra: [sized] });
      try {
        await client.start("sized-flow", { runId: "sized", input: {} });
        const res = await engine().invoke("sized");
        expect(res.status === "failed" ? res.error : undefined).toMatchObject({ name: "UnsupportedExpressionError", message: expect.stringMatching(/size\(\) is not supported/) });
        expect(await lab.get("stock", { sku: "A1" })).toEqual({ sku: "A1", available: 5 });
        expect(await lab.store.getRecord("sized", "step#sized")).toMatchObject({ body: { status: "failed", attempts: 1 } });
      } finally {
        await lab.close();
      }
    });

    it("validation errors fail the step before anything is written", async () => {
      const Case = z.object({ case: z.enum(["same-key", "too-many", "unknown-placeholder", "unused-placeholder"]) });
      let names = { stock: "stock", ledger: "ledger" };
      const bad = durable({ name: "bad-flow", input: Case }, async (input, step) =>
        step.transact("bad", (tx) => {
          if (input.case === "same-key") {
            tx.update({ table: names.stock, key: { sku: "A1" }, update: "SET available = :z", values: { ":z": 0 } });
            tx.put({ table: names.stock, item: { sku: "A1", available: 1 } });
          }
          if (input.case === "too-many") for (let i = 0; i < 100; i++) tx.put({ table: names.ledger, item: { pk: "many", sk: `line-${i}` } });
          if (input.case === "unknown-placeholder") tx.update({ table: names.stock, key: { sku: "A1" }, update: "SET available = :n" });
          if (input.case === "unused-placeholder") tx.update({ table: names.stock, key: { sku: "A1" }, update: "SET available = :n", values: { ":n": 1, ":m": 2 } });
          return "never";
        }),
      );
      const { lab, client, engine } = await setup({ extra: [bad] });
      names = lab.names;
      try {
        const problems: Record<string, RegExp> = {
          "same-key": /items 0 and 1 both write/,
          "too-many": /100 items, over the 99/,
          "unknown-placeholder": /uses :n, which `values` does not define/,
          "unused-placeholder": /:m is defined but no expression uses it/,
        };
        for (const [c, problem] of Object.entries(problems)) {
          await client.start("bad-flow", { runId: `bad-${c}`, input: { case: c } });
          const res = await engine().invoke(`bad-${c}`);
          expect(res.status, c).toBe("failed");
          const error = res.status === "failed" ? res.error : undefined;
          expect(error?.name, c).toBe("TransactValidationError");
          expect(error?.message, c).toMatch(problem);
        }
        expect(await lab.get(lab.names.stock, { sku: "A1" })).toEqual({ sku: "A1", available: 5 });
        expect(await lab.get(lab.names.ledger, { pk: "many", sk: "line-0" })).toBeUndefined();
      } finally {
        await lab.close();
      }
    });
  });
}
