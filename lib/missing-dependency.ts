/**
 * An optional peer dependency a subpath needs is not installed: `better-sqlite3` for
 * `waymark/local`, `ai` for `waymark/ai`. Its absence is an instruction, not a bare
 * ERR_MODULE_NOT_FOUND.
 */
import { WaymarkError } from "./core/errors.ts";

/**
 * A part of Waymark was used in a project without the optional package it needs.
 *
 * @example
 * ```ts
 * try {
 *   openLocalDatabase(".waymark/journal.db");
 * } catch (err) {
 *   if (err instanceof MissingDependencyError) console.error(`run: npm install ${err.packageName}`);
 * }
 * ```
 */
export class MissingDependencyError extends WaymarkError {
  override readonly name = "MissingDependencyError" as const;
  readonly retryable = false;
  constructor(readonly packageName: string, feature: string, options?: { cause?: unknown }) {
    super(`${feature} needs the package "${packageName}", which is not installed. Install it: npm install ${packageName}`, options);
  }
}

/** Whether `err` is Node's "cannot find module" for the package `name` itself (not for something it imports). */
export function isModuleNotFound(err: unknown, name: string): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  return typeof e === "object" && e !== null && e.code === "MODULE_NOT_FOUND" && String(e.message).includes(`'${name}'`);
}
