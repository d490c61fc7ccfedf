/**
 * `waymark/ai` is for AI SDK agents: importing it without the optional peer `ai` installed fails
 * at once with a {@link MissingDependencyError} that names it, instead of at the first model call
 * or with Node's bare module-not-found. Only resolved, never loaded: nothing of `ai` is needed
 * at run time here (the model wrapper and the error check are Waymark's own).
 */
import { createRequire } from "node:module";
import { isModuleNotFound, MissingDependencyError } from "../missing-dependency.ts";

/** The AI SDK package `waymark/ai` works with (6.x and 7.x). */
export const AI_SDK = "ai";

/**
 * Throws {@link MissingDependencyError} when `name` cannot be resolved from here.
 *
 * @example
 * ```ts
 * requirePeer("ai", "waymark/ai (durable AI SDK agents)");
 * ```
 */
export function requirePeer(name: string, feature: string, resolve: (name: string) => string = createRequire(import.meta.url).resolve): void {
  try {
    resolve(name);
  } catch (err) {
    if (isModuleNotFound(err, name)) throw new MissingDependencyError(name, feature, { cause: err });
    throw err;
  }
}

requirePeer(AI_SDK, "waymark/ai (durable AI SDK agents)");
