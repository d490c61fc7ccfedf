/**
 * The peers live in a cache folder outside the repository, with a package.json of their own:
 * nothing of theirs enters Waymark's package.json or lockfile. `ensurePeers` installs the pinned
 * versions there when one is missing or at another version, and copies the worker scripts in
 * (their imports resolve from that folder's node_modules).
 */
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The AWS SDK and its testing package require Node ≥ 22 (engines), and so does the Restate SDK
 * (it calls Promise.withResolvers); this package ships that binary. DBOS runs on Waymark's Node.
 */
const NODE22 = `node-${process.platform}-${process.arch}`;

export const PINS: Readonly<Record<string, string>> = {
  "@aws/durable-execution-sdk-js": "2.4.0",
  "@aws/durable-execution-sdk-js-testing": "1.1.4",
  "@restatedev/restate-server": "1.7.12",
  "@restatedev/restate-sdk": "1.17.2",
  "@dbos-inc/dbos-sdk": "5.3.0",
  [NODE22]: "22.23.5",
};

export interface PeerCache {
  dir: string;
  /** A Node ≥ 22 binary for the AWS and Restate workers. */
  node22: string;
  restateServer: string;
  workers: string;
}

export function cacheDir(): string {
  return process.env.WAYMARK_PEERS_CACHE ?? join(homedir(), ".cache", "waymark-peers");
}

function installedVersion(dir: string, name: string): string | undefined {
  const file = join(dir, "node_modules", name, "package.json");
  if (!existsSync(file)) return undefined;
  return (JSON.parse(readFileSync(file, "utf8")) as { version?: string }).version;
}

export function ensurePeers(): PeerCache {
  const dir = cacheDir();
  mkdirSync(dir, { recursive: true });
  const missing = Object.entries(PINS).filter(([name, version]) => installedVersion(dir, name) !== version);
  if (missing.length > 0) {
    console.log(`peers: installing into ${dir}: ${missing.map(([n, v]) => `${n}@${v}`).join(", ")}`);
    // @scarf/scarf (pulled in by @restatedev/restate-server) has an install script that only
    // reports the download; none of the peers needs an install script, so none is allowed.
    const manifest = { name: "waymark-peers", private: true, type: "module", dependencies: PINS, allowScripts: { "@scarf/scarf": false } };
    writeFileSync(join(dir, "package.json"), `${JSON.stringify(manifest, null, 2)}\n`);
    const npm = spawnSync("npm", ["install", "--no-audit", "--no-fund", "--loglevel=error"], { cwd: dir, stdio: "inherit" });
    if (npm.status !== 0) throw new Error(`npm install in ${dir} failed (exit ${npm.status ?? npm.signal})`);
    const still = Object.entries(PINS).filter(([name, version]) => installedVersion(dir, name) !== version);
    if (still.length > 0) throw new Error(`not installed in ${dir}: ${still.map(([n, v]) => `${n}@${v}`).join(", ")}`);
  }
  const workers = join(dir, "workers");
  mkdirSync(workers, { recursive: true });
  const source = join(dirname(fileURLToPath(import.meta.url)), "workers");
  for (const file of readdirSync(source)) if (file.endsWith(".mjs")) copyFileSync(join(source, file), join(workers, file));
  const major = Number(process.versions.node.split(".")[0]);
  return {
    dir,
    node22: major >= 22 ? process.execPath : join(dir, "node_modules", NODE22, "bin", "node"),
    restateServer: join(dir, "node_modules", "@restatedev", `restate-server-${process.platform}-${process.arch}`, "bin", "restate-server"),
    workers,
  };
}
