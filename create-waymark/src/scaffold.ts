/**
 * Writes a new Waymark project from the template: the template's files as they are, but for the
 * package name, the stack's name and the `waymark` dependency. Everything is checked before the
 * first file is written, so a refused project leaves nothing behind.
 */
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { basename, isAbsolute, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The template, beside `dist/` in the package (and beside `src/` in the repository). */
export const TEMPLATE = fileURLToPath(new URL("../template/", import.meta.url));

/** What the caller asked for that cannot be done: exit code 2 (usage) or 1 (refused). */
export class ScaffoldError extends Error {
  override readonly name = "ScaffoldError" as const;
  constructor(message: string, readonly exitCode: 1 | 2) {
    super(message);
  }
}

export interface ScaffoldOptions {
  /** Where to create the project; its last segment is the package name. */
  directory: string;
  /** The `waymark` dependency: a version range, or a tarball or folder path (written as `file:` + its absolute path). */
  waymark: string;
  /** Resolves relative paths. Default: the process's working directory. */
  cwd?: string;
}

export interface Scaffolded {
  /** The project's absolute path. */
  root: string;
  /** Its package name. */
  name: string;
  /** Its CDK stack's name. */
  stack: string;
  /** The files written, relative to the root, sorted. */
  files: string[];
}

/**
 * Creates the project.
 *
 * @example
 * ```ts
 * const created = scaffold({ directory: "my-app", waymark: "^0.1.0" });
 * console.log(created.files); // [".gitignore", "README.md", "bin/app.ts", …]
 * ```
 */
export function scaffold(options: ScaffoldOptions): Scaffolded {
  const cwd = options.cwd ?? process.cwd();
  const root = resolve(cwd, options.directory);
  const name = packageName(basename(root));
  const stack = stackName(name);
  const waymark = dependencySpec(options.waymark, cwd);
  if (existsSync(root) && readdirSync(root).length > 0) throw new ScaffoldError(`${root} is not empty: choose a new directory (nothing was written)`, 1);

  mkdirSync(root, { recursive: true });
  cpSync(TEMPLATE, root, { recursive: true });
  // npm turns a packed `.gitignore` into `.npmignore`, so the template keeps it without the dot.
  renameSync(join(root, "gitignore"), join(root, ".gitignore"));

  const manifestPath = join(root, "package.json");
  const manifest = JSON.parse(readFileSync(manifestPath, "utf8")) as { name: string; dependencies: Record<string, string> };
  manifest.name = name;
  manifest.dependencies.waymark = waymark;
  writeFileSync(manifestPath, `${JSON.stringify(manifest, null, 2)}\n`);
  for (const file of ["bin/app.ts", "README.md"]) {
    const path = join(root, file);
    writeFileSync(path, readFileSync(path, "utf8").replaceAll("WaymarkApp", stack).replaceAll("waymark-app", name));
  }
  return { root, name, stack, files: listFiles(root) };
}

/**
 * The npm package name for a directory name, or a {@link ScaffoldError} saying why it cannot be one.
 *
 * @example
 * ```ts
 * packageName("expenses"); // "expenses"
 * ```
 */
export function packageName(directory: string): string {
  const problem =
    directory.length === 0 ? "is empty"
    : directory.length > 214 ? "is longer than 214 characters"
    : /^[._]/.test(directory) ? "starts with a dot or an underscore"
    : directory !== directory.toLowerCase() ? "has capital letters"
    : !/^[a-z0-9][a-z0-9._~-]*$/.test(directory) ? "has characters other than a-z, 0-9, '-', '.', '_' and '~'"
    : ["node_modules", "favicon.ico"].includes(directory) ? "is reserved"
    : undefined;
  if (problem) throw new ScaffoldError(`"${directory}" cannot be an npm package name: it ${problem}. Choose a directory named like my-app`, 2);
  return directory;
}

/** `expense-approvals` → `ExpenseApprovals`: a CloudFormation stack name (letters, digits, hyphens, starting with a letter). */
export function stackName(name: string): string {
  const pascal = name.split(/[^a-zA-Z0-9]+/).filter(Boolean).map((w) => w[0]?.toUpperCase() + w.slice(1)).join("");
  return /^[A-Za-z]/.test(pascal) ? pascal : `App${pascal}`;
}

/** A path (tarball or folder) becomes `file:<absolute path>`, so it holds from the new project's folder; a range stays. */
function dependencySpec(spec: string, cwd: string): string {
  if (spec.trim() === "") throw new ScaffoldError("--waymark needs a version range or a path", 2);
  if (spec.startsWith("file:")) return `file:${resolve(cwd, spec.slice("file:".length))}`;
  const isPath = isAbsolute(spec) || spec.startsWith("./") || spec.startsWith("../") || spec.endsWith(".tgz");
  if (!isPath) return spec;
  const path = resolve(cwd, spec);
  if (!existsSync(path)) throw new ScaffoldError(`--waymark ${spec}: no such file or folder`, 2);
  return `file:${path}`;
}

function listFiles(root: string, prefix = ""): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(join(root, prefix), { withFileTypes: true })) {
    const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (entry.isDirectory()) out.push(...listFiles(root, rel));
    else out.push(rel);
  }
  return out.sort();
}
