/**
 * The Node versions Lambda runs, besides the system's: for Node 22 and Node 24 (the npm packages
 * `node@22` / `node@24`, installed into the CI cache, never over the system's Node),
 *
 *   1. the suite's core (vitest.core.config.ts: no Java, emulators or browser), run by that Node
 *      from a copy of the repository's sources whose node_modules link to the repository's, but
 *      for better-sqlite3 (built for that Node's ABI) and, on Node 22, the AI SDK: ai 7 and its
 *      @ai-sdk packages instead of ai 6, so waymark/ai's tests run on ai 7 too;
 *   2. the consumer test (consumer.ts --quick, with --ai 7 on Node 22) run by that Node, so every
 *      command of the packed-tarball project runs on it.
 *
 * Run: npm run test:node-versions [-- --only 22] (in .ci/run).
 */
import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { AI_7, CACHE, NODE_RELEASES, nodeBinary, once, pathWith, run, sqlitePackage, sqlitePrebuildEnv } from "./ci-cache.ts";
import { outsideEnv, repo, step, summary, version } from "./harness.ts";

const { values } = parseArgs({ options: { only: { type: "string" } } });
const majors = (Object.keys(NODE_RELEASES) as Array<`${keyof typeof NODE_RELEASES}`>).filter((m) => values.only === undefined || values.only === m);
if (majors.length === 0) throw new Error(`--only ${values.only}: not one of ${Object.keys(NODE_RELEASES).join(", ")}`);

/** What the suite reads from the repository, besides its node_modules. */
const SOURCES = ["lib", "test", "functions", "infra", "bench", "create-waymark", "package.json", "tsconfig.json", "vitest.core.config.ts", "LICENSE", "README.md"];

/** ai 7 with its own @ai-sdk packages, installed once into the cache. */
function ai7(): string {
  const dir = once(join(CACHE, `ai-${AI_7.ai}`), (tmp) => {
    writeFileSync(join(tmp, "package.json"), '{ "private": true }\n');
    run(tmp, "npm", ["install", "--no-audit", "--no-fund", "--loglevel=error", `ai@${AI_7.ai}`, `@ai-sdk/provider@${AI_7["@ai-sdk/provider"]}`, `zod@${version("zod")}`]);
  });
  return join(dir, "node_modules");
}

/**
 * A copy of the sources whose node_modules link to the repository's, except the packages that
 * must differ on this Node. A link is followed to where it points (Node resolves real paths), so
 * a linked package finds its own dependencies in the repository, and better-sqlite3 its own
 * beside its build.
 */
function sourcesFor(node: string, major: string, withAi7: boolean): string {
  const dir = mkdtempSync(join(tmpdir(), `waymark-node${major}-`));
  for (const entry of SOURCES) cpSync(join(repo, entry), join(dir, entry), { recursive: true, filter: (src) => !/\/(node_modules|dist|\.waymark|cdk\.out)(\/|$)/.test(src.slice(repo.length)) });
  const modules = join(dir, "node_modules");
  mkdirSync(modules);
  const replaced = new Map<string, string>([["better-sqlite3", sqlitePackage(node)]]);
  if (withAi7) {
    const ai = ai7();
    replaced.set("ai", join(ai, "ai"));
    replaced.set("@ai-sdk", join(ai, "@ai-sdk"));
  }
  for (const entry of readdirSync(join(repo, "node_modules"))) {
    if (entry.startsWith(".") && entry !== ".bin") continue; // tools' caches stay per copy
    symlinkSync(replaced.get(entry) ?? join(repo, "node_modules", entry), join(modules, entry));
  }
  return dir;
}

/** Runs a command on `node` with its output shown as it comes; throws on a non-zero exit. */
function onNode(node: string, cwd: string, args: string[], env: NodeJS.ProcessEnv = {}): void {
  const run = spawnSync(node, args, { cwd, stdio: "inherit", env: outsideEnv({ PATH: pathWith(node), ...env }) });
  if (run.status !== 0) throw new Error(`${args.join(" ")} on ${node} ended with ${run.status ?? run.signal}`);
}

for (const major of majors) {
  const release = NODE_RELEASES[major];
  const withAi7 = major === "22";
  let node = "";
  await step(`node@${release} from npm, into the CI cache (${CACHE})`, () => {
    node = nodeBinary(release);
    sqlitePrebuildEnv(node); // better-sqlite3 for its ABI: built once, then cached
    return `${node}, better-sqlite3 ${version("better-sqlite3")} for ABI ${spawnSync(node, ["-p", "process.versions.modules"], { encoding: "utf8" }).stdout.trim()}`;
  });
  if (!node) continue;
  await step(`Node ${release}: the suite's core (vitest.core.config.ts)${withAi7 ? `, waymark/ai's tests on ai ${AI_7.ai}` : ""}`, () => {
    const copy = sourcesFor(node, major, withAi7);
    try {
      onNode(node, copy, [join("node_modules", "vitest", "vitest.mjs"), "run", "--config", "vitest.core.config.ts"]);
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
  });
  await step(`Node ${release}: the consumer test (--quick${withAi7 ? ", --ai 7" : ""})`, () => {
    onNode(node, repo, ["--import", "tsx", join("test", "package", "consumer.ts"), "--quick", ...(withAi7 ? ["--ai", "7"] : [])]);
  });
}

summary("node versions");
