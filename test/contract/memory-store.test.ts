import { MemoryJournalStore } from "../../lib/testing/memory-store.ts";
import { MemoryWakeQueue } from "../../lib/testing/memory-wakes.ts";
import { journalStoreContract, journalWakeQueueContract } from "./store-contract.ts";

journalStoreContract("memory", async () => ({ store: new MemoryJournalStore() }));
journalWakeQueueContract("memory", async () => ({ queue: new MemoryWakeQueue() }));
