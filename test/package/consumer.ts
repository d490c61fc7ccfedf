/**
 * The package as a user gets it: `npm pack`, the tarball installed into a fresh project in a
 * temporary folder (outside the repository, so nothing resolves to its sources or node_modules,
 * and the repository's bins off PATH), then everything a user does with it, each step a command
 * whose failure fails this script:
 *
 *   1. the tarball holds dist/, the bin, the LICENSE, docs/ (the README's links) and the
 *      TypeScript sources its source maps and declaration maps point at (every map's sources are
 *      in it), and no tests, bench, examples or CI files;
 *   2. `tsc --strict` (skipLibCheck off, so Waymark's .d.ts are checked too) under module
 *      resolution node16 (emitting the JS the next steps run), bundler and nodenext;
 *   3. a workflow on waymark/testing, then on waymark/local (SQLite), then the `waymark` bin
 *      lists that run from the journal file;
 *   4. the bin on a TypeScript module (tsx installed, as users have it): `runs start
 *      --workflows src/order-flow.ts`, then `waymark dev src/order-flow.ts`, whose dashboard is
 *      fetched over HTTP while its runtime takes that run to its wait, then Ctrl-C;
 *   5. CommonJS: require() of the package at run time;
 *   6. a DurableFunction stack from waymark/cdk, synthesized with the construct's real esbuild
 *      bundling of the project's Lambda entry;
 *   7. the Lambda entry bundled by esbuild as the construct does (SDK external): no static SDK
 *      import, and the bundle loads in plain Node;
 *   8. waymark/ai: its types under node16 and bundler (with the DOM lib and @types/json-schema,
 *      which the AI SDK's own declarations need), and an AI SDK agent (the SDK's mock model) on
 *      waymark/testing, approval included; with `--ai 7`, on ai 7 instead of ai 6, and also an
 *      agent on a provider of ai 7's model interface (version 4) whose answer carries a file;
 *   9. the optional peers removed (aws-cdk-lib, constructs, better-sqlite3, ai, @ai-sdk/provider):
 *      the Lambda subpaths still load and bundle, and waymark/local and waymark/ai say which
 *      package to install.
 *
 * Options: `--ai 7` (above); `--quick` skips the type checks that do not depend on the Node
 * version running this (bundler and nodenext, ai 6's bundler check), for the runs on other Node
 * versions (node-versions.ts). The Node that runs this script runs every command of the project.
 * better-sqlite3 takes its build from the CI cache (ci-cache.ts) instead of compiling SQLite.
 *
 * Run: npm run test:package (in .ci/run). Keep the folder with WAYMARK_KEEP_CONSUMER=1.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { AI_7, pathWith, sqlitePrebuildEnv } from "./ci-cache.ts";
import { dashboardUrl, expectThat, httpGet, repo, serve, sh, step, summary, until, version } from "./harness.ts";

const { values: options } = parseArgs({ options: { ai: { type: "string", default: "6" }, quick: { type: "boolean", default: false } } });
if (options.ai !== "6" && options.ai !== "7") throw new Error(`--ai 6 or --ai 7, not ${options.ai}`);

const fixture = fileURLToPath(new URL("./fixture/", import.meta.url));
const work = mkdtempSync(join(tmpdir(), "waymark-consumer-"));
const project = join(work, "project");
cpSync(fixture, project, { recursive: true });
// The project's commands run on the Node that runs this script.
const onThisNode = { PATH: pathWith(process.execPath) };
const run = (command: string, args: string[], env: NodeJS.ProcessEnv = {}) => sh(project, command, args, { ...onThisNode, ...env });
// The bundle's SDK imports: the Lambda runtime provides the SDK, so the project must have it.
const bundleArgs = ["esbuild", "src/lambda.ts", "--bundle", "--platform=node", "--format=esm", "--target=node22", "--minify", "--external:@aws-sdk/*", "--outfile=lambda-bundle/index.mjs",
  "--banner:js=import { createRequire as __waymarkCreateRequire } from 'node:module'; const require = __waymarkCreateRequire(import.meta.url);"];

function checkBundle(): string {
  run("npx", bundleArgs);
  const code = readFileSync(join(project, "lambda-bundle/index.mjs"), "utf8");
  const staticSdk = [...code.matchAll(/\bfrom\s*["'](@aws-sdk\/[^"']+)["']/g)].map((m) => m[1]);
  expectThat(staticSdk.length === 0, `static SDK imports in the Lambda bundle: ${staticSdk.join(", ")}`);
  expectThat(!code.includes("better-sqlite3") && !code.includes("aws-cdk-lib"), "the Lambda bundle pulls in waymark/local or waymark/cdk");
  const loaded = run("node", ["--input-type=module", "-e", "const m = await import('./lambda-bundle/index.mjs'); process.stdout.write(typeof m.handler)"]);
  expectThat(loaded === "function", `the bundle's handler is ${loaded}`);
  return `lambda-bundle/index.mjs: ${(code.length / 1024).toFixed(1)} KiB minified, loads in plain Node, no static SDK import`;
}

/** Every source map in the tarball names sources that the tarball holds. */
function checkMaps(tarball: string, files: string[]): string {
  const held = new Set(files);
  const unpacked = join(work, "unpacked");
  sh(work, "mkdir", ["-p", unpacked]);
  sh(work, "tar", ["xzf", tarball, "-C", unpacked]);
  const maps = files.filter((f) => f.endsWith(".map"));
  const missing: string[] = [];
  for (const map of maps) {
    const { sources } = JSON.parse(readFileSync(join(unpacked, "package", map), "utf8")) as { sources: string[] };
    for (const source of sources) {
      const path = normalize(join(dirname(map), source));
      if (!held.has(path)) missing.push(`${map} → ${path}`);
    }
  }
  expectThat(maps.length > 0, "the tarball has no source maps");
  expectThat(missing.length === 0, `source maps name files the tarball lacks: ${missing.slice(0, 5).join(", ")}${missing.length > 5 ? ` (+${missing.length - 5})` : ""}`);
  return `${maps.length} maps (.js.map and .d.ts.map), every source in the tarball`;
}

try {
  console.log(`Waymark consumer test in ${project} (node ${process.version}, ai ${options.ai}${options.quick ? ", quick" : ""})`);
  let tarball = "";
  await step("npm pack (prepack builds dist/)", () => {
    const out = JSON.parse(sh(repo, "npm", ["pack", "--json", "--pack-destination", work])) as Array<{ filename: string; files: Array<{ path: string }> }>;
    const packed = out[0];
    if (!packed) throw new Error("npm pack printed no file");
    tarball = join(work, packed.filename);
    const files = packed.files.map((f) => f.path);
    const stray = files.filter((f) => /^(test|bench|\.ci|functions)\//.test(f) || f === "infra/app.ts" || f.endsWith(".db") || /(^|\/)app\.js$/.test(f));
    expectThat(stray.length === 0, `the tarball ships ${stray.join(", ")}`);
    for (const need of ["LICENSE", "dist/lib/index.js", "dist/lib/index.d.ts", "dist/lib/index.d.ts.map", "lib/index.ts", "dist/lib/ai/index.js", "dist/lib/ai/index.d.ts", "dist/infra/index.js", "infra/index.ts", "dist/lib/cli/main.js", "bin/waymark.mjs", "package.json", "docs/README.md", "docs/getting-started.md", "docs/api/README.md"]) {
      expectThat(files.includes(need), `the tarball lacks ${need}`);
    }
    expectThat(readFileSync(join(repo, "LICENSE"), "utf8").includes("Apache License") && (JSON.parse(readFileSync(join(repo, "package.json"), "utf8")) as { license: string }).license === "Apache-2.0", "the LICENSE is not the package's license");
    return `${packed.filename}: ${files.length} files; ${checkMaps(tarball, files)}`;
  });

  const ai = options.ai === "7" ? [`ai@${AI_7.ai}`, `@ai-sdk/provider@${AI_7["@ai-sdk/provider"]}`] : ["ai", "@ai-sdk/provider"].map((n) => `${n}@${version(n)}`);
  await step(`npm install the tarball, zod, TypeScript, esbuild, tsx, aws-cdk-lib, constructs, better-sqlite3, ${ai.join(", ")}`, () => {
    const deps = ["zod", "typescript", "esbuild", "tsx", "@types/node", "aws-cdk-lib", "constructs", "better-sqlite3", "@types/better-sqlite3"].map((n) => `${n}@${version(n)}`);
    // The AI SDK's declarations import json-schema's types; its own package does not bring them.
    run("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error", tarball, ...deps, ...ai, "@types/json-schema@^7.0.15"], sqlitePrebuildEnv());
  });

  await step("tsc --strict, moduleResolution node16 (emits out/)", () => run("npx", ["tsc", "-p", "tsconfig.json"]));
  if (!options.quick) {
    await step("tsc --strict, moduleResolution bundler", () => run("npx", ["tsc", "-p", "tsconfig.bundler.json"]));
    await step("tsc --strict, moduleResolution nodenext (with a CommonJS .cts file)", () => run("npx", ["tsc", "-p", "tsconfig.nodenext.json"]));
  }
  if (options.ai === "7") {
    await step("tsc --strict, waymark/ai with ai 7, node16 (emits out/agent.js, out/agent-v4.js) and bundler", () => {
      run("npx", ["tsc", "-p", "tsconfig.ai7.json"]);
      run("npx", ["tsc", "-p", "tsconfig.ai7.bundler.json"]);
    });
  } else {
    await step(`tsc --strict, waymark/ai with the AI SDK, node16 (emits out/agent.js)${options.quick ? "" : " and bundler"}`, () => {
      run("npx", ["tsc", "-p", "tsconfig.ai.json"]);
      if (!options.quick) run("npx", ["tsc", "-p", "tsconfig.ai.bundler.json"]);
    });
  }
  await step("a workflow on waymark/testing", () => run("node", ["out/testing.js"]));
  await step(`an AI SDK agent on waymark/ai (the SDK's mock model, ai ${options.ai}), approved, on waymark/testing`, () => run("node", ["out/agent.js"]));
  if (options.ai === "7") await step("ai 7: an agent on a version 4 model whose answer carries a file, approved, replayed", () => run("node", ["out/agent-v4.js"]));
  const journal = join(work, "journal.db");
  await step("a workflow on waymark/local (SQLite)", () => run("node", ["out/local.js", journal]));
  await step("the waymark bin lists that run", () => {
    const out = run("npx", ["waymark", "runs", "list", "--file", journal]);
    expectThat(/^RUN ID\s+WORKFLOW\s+STATUS/.test(out) && out.includes("greet-1") && out.includes("completed"), `waymark runs list printed: ${out}`);
    return out;
  });
  await step("waymark runs start --workflows src/order-flow.ts (a TypeScript module, through tsx)", () => {
    const out = run("npx", ["waymark", "runs", "start", "order-flow", "--run-id", "cli-1", "--input", '{"orderId":"c1","amount":5}', "--workflows", "src/order-flow.ts", "--file", journal]);
    expectThat(JSON.stringify(JSON.parse(out)) === JSON.stringify({ runId: "cli-1", workflow: "order-flow", created: true, status: "pending" }), `it printed: ${out}`);
    return out;
  });
  await step("waymark dev src/order-flow.ts: the dashboard over HTTP, cli-1 taken to its wait, then Ctrl-C", async () => {
    const dev = serve(project, "npx", ["waymark", "dev", "src/order-flow.ts", "--port", "0", "--file", journal], onThisNode);
    let listed: string;
    try {
      const url = await dashboardUrl(dev);
      const form = await httpGet(`${url}/ui/start`);
      expectThat(form.status === 200 && form.body.includes("order-flow"), `GET /ui/start answered ${form.status} without the workflow`);
      listed = await until("cli-1 to wait for approval", () => {
        const out = run("npx", ["waymark", "runs", "list", "--file", journal]);
        return /cli-1\s+order-flow\s+suspended .*signal:approval/.test(out) ? out : undefined;
      });
    } catch (err) {
      await dev.stop();
      throw new Error(`${(err as Error).message}\nwaymark dev printed:\n${dev.output()}`, { cause: err });
    }
    const ended = await dev.stop();
    expectThat(ended.code === 0 || ended.signal === "SIGINT", `waymark dev ended with ${JSON.stringify(ended)}:\n${dev.output()}`);
    return listed;
  });
  await step("CommonJS: require('waymark') at run time", () => run("node", ["cjs/run.cjs"]));
  await step("a DurableFunction stack from waymark/cdk, bundled by the construct", () => run("node", ["out/stack.js", join(work, "cdk.out")]));
  await step("the Lambda entry bundled with esbuild", checkBundle);

  await step("npm uninstall the optional peers (aws-cdk-lib, constructs, better-sqlite3, ai, @ai-sdk/provider)", () => {
    run("npm", ["uninstall", "--no-audit", "--no-fund", "--loglevel=error", "aws-cdk-lib", "constructs", "better-sqlite3", "@types/better-sqlite3", "ai", "@ai-sdk/provider"]);
  });
  await step("without them: the Lambda subpaths load, waymark/local and waymark/ai name their missing package", () => run("node", ["out/lambda-only.js"]));
  await step("without them: the Lambda entry still bundles and loads", checkBundle);
} finally {
  if (process.env.WAYMARK_KEEP_CONSUMER) console.log(`kept ${work}`);
  else rmSync(work, { recursive: true, force: true });
}

summary("consumer");
