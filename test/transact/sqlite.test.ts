/** step.transact on the SQLite store: emulated tables in a real journal file, one SQLite transaction per step. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { openLocalDatabase } from "../../lib/local/database.ts";
import { SqliteJournalStore } from "../../lib/local/sqlite-store.ts";
import { transactSuite } from "./suite.ts";
import { TABLE_KEYS } from "./workflows.ts";

const dir = mkdtempSync(join(tmpdir(), "waymark-transact-"));
let files = 0;
afterAll(() => rmSync(dir, { recursive: true, force: true }));

transactSuite("SQLite", async () => {
  const db = openLocalDatabase(join(dir, `j${++files}`, "journal.db"));
  const store = new SqliteJournalStore(db, { tables: TABLE_KEYS });
  return {
    store,
    names: { stock: "stock", ledger: "ledger" },
    get: async (table, key) => store.tables.get(table, key),
    put: async (table, item) => store.tables.put(table, item),
    close: async () => void db.close(),
  };
}, { emulated: true });

describe("the SQLite store's emulated tables", () => {
  it("live in the journal file: another connection sees the items and the record of one commit", async () => {
    const file = join(dir, "shared", "journal.db");
    const a = new SqliteJournalStore(openLocalDatabase(file), { tables: TABLE_KEYS });
    const b = new SqliteJournalStore(openLocalDatabase(file), { tables: TABLE_KEYS });
    a.tables.put("stock", { sku: "Z9", available: 2 });
    const record = { key: "step#x", body: { v: 1, type: "step", kind: "run", stepId: "x", status: "ok", result: 1, attempts: 1, startedAt: 0, at: 0, semantics: "exactly-once" } };
    const ops = [{ op: "update" as const, table: "stock", key: { sku: "Z9" }, update: "ADD available :n", values: { ":n": -1 } }];
    expect(await a.transactRecord("r", record, ops, "r/x#1@1")).toEqual({ written: true });
    expect(b.tables.get("stock", { sku: "Z9" })).toEqual({ sku: "Z9", available: 1 });
    expect((await b.getRecord("r", "step#x"))?.body).toEqual(record.body);
    // From the other connection, the same request again: its record is there, nothing is applied twice.
    expect(await b.transactRecord("r", record, ops, "r/x#1@1")).toEqual({ written: true });
    expect(a.tables.get("stock", { sku: "Z9" })).toEqual({ sku: "Z9", available: 1 });
    expect(a.tables.scan("stock")).toEqual([{ sku: "Z9", available: 1 }]);
  });
});
