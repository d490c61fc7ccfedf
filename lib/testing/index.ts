/** `waymark/testing`: the engine on an in-memory journal and a virtual clock. */
export { createTestRuntime, TestRuntime, type TestRuntimeOptions } from "./runtime.ts";
export { VirtualClock } from "./virtual-clock.ts";
export { MemoryJournalStore, type MemoryJournalStoreOptions } from "./memory-store.ts";
export { MemoryWakeQueue } from "./memory-wakes.ts";
export { MemoryTables } from "./memory-tables.ts";
export { MemoryPayloadStore } from "./memory-payloads.ts";
export { replayHistories, type HistoryReport, type ReplayHistoriesOptions } from "./replay-histories.ts";
export { type RunHistory, toHistory, parseHistory, HISTORY_FORMAT } from "../core/history.ts";
