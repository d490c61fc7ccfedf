/** step.transact on the test runtime's memory store (its emulated tables). */
import { MemoryJournalStore } from "waymark/testing";
import { transactSuite } from "./suite.ts";
import { TABLE_KEYS } from "./workflows.ts";

transactSuite("the memory store", async () => {
  const store = new MemoryJournalStore({ tables: TABLE_KEYS });
  return {
    store,
    names: { stock: "stock", ledger: "ledger" },
    get: async (table, key) => store.tables.get(table, key),
    put: async (table, item) => store.tables.put(table, item),
    close: async () => {},
  };
}, { emulated: true });
