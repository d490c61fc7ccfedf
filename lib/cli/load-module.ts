/**
 * Loads a user's workflow module for the CLI (`waymark dev x.ts`, `--workflows x.ts`).
 *
 * A TypeScript module (`.ts`, `.mts`, `.cts`) is loaded through tsx when the project has it:
 * tsx's loader is registered *before* the first import. Importing first and registering on
 * failure does not work: Node caches the failed import of that URL, and the second import throws
 * the same `ERR_UNKNOWN_FILE_EXTENSION` again. tsx is preferred even where Node strips types by
 * itself (22.18+, 24): Node's own loader does not map `./steps.js` to `steps.ts`, nor read
 * tsconfig `paths`, as a project written for `tsc` expects. Without tsx, Node's own loader is
 * tried, and a failure says to install tsx.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const TYPESCRIPT = /\.[cm]?ts$/;

/** Node cannot load a TypeScript module, and tsx is not installed. */
export class TypeScriptLoaderError extends Error {
  override readonly name = "TypeScriptLoaderError" as const;
}

let registered: Promise<boolean> | undefined;

/**
 * Imports the module at an absolute path, registering tsx first for a TypeScript one.
 *
 * @example
 * ```ts
 * const exported = await importUserModule(resolve("src/expense.ts"));
 * ```
 */
export async function importUserModule(path: string): Promise<unknown> {
  const url = pathToFileURL(path).href;
  if (!TYPESCRIPT.test(path)) return import(url);
  const viaTsx = await (registered ??= registerTsx(path));
  try {
    return await import(url);
  } catch (err) {
    if (viaTsx || !isUnloadableTypeScript(err)) throw err;
    throw new TypeScriptLoaderError(
      `${path} is TypeScript, and Node cannot load it by itself: install tsx in the project (npm install -D tsx), or run node --import tsx, or point at compiled JavaScript (${(err as Error).message})`,
      { cause: err },
    );
  }
}

/** Registers tsx's loader, found from the module's project first, then from the CLI's own. */
async function registerTsx(module: string): Promise<boolean> {
  const api = tsxApiFrom(module) ?? tsxApiFrom(fileURLToPath(import.meta.url));
  if (api === undefined) return false;
  const { register } = (await import(api)) as { register: () => unknown };
  register();
  return true;
}

/** The URL of tsx's ESM API (`tsx/esm/api`) as resolved from a file, if tsx is installed there. */
function tsxApiFrom(file: string): string | undefined {
  let manifest: string;
  try {
    manifest = createRequire(file).resolve("tsx/package.json");
  } catch {
    return undefined;
  }
  // `require.resolve("tsx/esm/api")` would give the CommonJS build, whose `register` cannot find
  // its own hooks; the ESM build is named by the package's exports.
  const { exports } = JSON.parse(readFileSync(manifest, "utf8")) as { exports?: Record<string, { import?: { default?: string } | string } | string> };
  const entry = exports?.["./esm/api"];
  const target = typeof entry === "object" ? (typeof entry.import === "string" ? entry.import : entry.import?.default) : undefined;
  return target === undefined ? undefined : pathToFileURL(join(dirname(manifest), target)).href;
}

function isUnloadableTypeScript(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === "ERR_UNKNOWN_FILE_EXTENSION" || code === "ERR_UNSUPPORTED_TYPESCRIPT_SYNTAX" || code === "ERR_UNSUPPORTED_NODE_MODULES_TYPE_STRIPPING";
}
