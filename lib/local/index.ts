/** `waymark/local`: the embedded default — SQLite journal, wake table, timer loop, in one process. */
export { createLocalRuntime, LocalRuntime, type LocalRuntimeOptions, isDeadLocalOwner } from "./runtime.ts";
export { openLocalDatabase, type Database, type Durability, type LocalDatabaseOptions } from "./database.ts";
export { MissingDependencyError, SQLITE_DRIVER } from "./sqlite-driver.ts";
export { SqliteJournalStore, type SqliteJournalStoreOptions } from "./sqlite-store.ts";
export { SqliteTables } from "./sqlite-tables.ts";
export { SqliteWakeTable } from "./wake-table.ts";
export { DirPayloadStore, payloadDirFor } from "./dir-payloads.ts";
export { formatTimeline, timelineRows, type TimelineRow } from "../cli/timeline.ts";
export { startDevServer, type DevServer, type DevServerOptions, DEFAULT_DEV_PORT } from "./dev-server.ts";
export { createDashboard, type Dashboard, type DashboardOptions } from "./dashboard.ts";
