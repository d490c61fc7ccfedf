/**
 * better-sqlite3, loaded when the first local journal is opened rather than when `waymark/local`
 * is imported: it is an optional peer dependency (a native module that a Lambda-only project
 * never needs), so its absence must be a clear instruction, not a bare ERR_MODULE_NOT_FOUND.
 */
import { createRequire } from "node:module";
import type BetterSqlite3 from "better-sqlite3";
import { isModuleNotFound, MissingDependencyError } from "../missing-dependency.ts";

export { MissingDependencyError };

/** The driver package `waymark/local` needs. */
export const SQLITE_DRIVER = "better-sqlite3";

let driver: typeof BetterSqlite3 | undefined;

/** The better-sqlite3 constructor, or a {@link MissingDependencyError} naming the package. */
export function sqliteDriver(): typeof BetterSqlite3 {
  if (driver) return driver;
  try {
    // A CommonJS package: `require` loads it synchronously, so opening a database stays synchronous.
    driver = createRequire(import.meta.url)(SQLITE_DRIVER) as typeof BetterSqlite3;
    return driver;
  } catch (err) {
    if (isModuleNotFound(err, SQLITE_DRIVER)) throw new MissingDependencyError(SQLITE_DRIVER, "waymark/local (the SQLite journal)", { cause: err });
    throw err;
  }
}
