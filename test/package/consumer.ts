/**
 * The package as a user gets it: `npm pack`, the tarball installed into a fresh project in a
 * temporary folder (outside the repository, so nothing resolves to its sources or node_modules),
 * then everything a user does with it, each step a command whose failure fails this script:
 *
 *   1. the tarball holds dist/ and the bin, and no sources, tests, bench or CI files;
 *   2. `tsc --strict` (skipLibCheck off, so Waymark's .d.ts are checked too) under module
 *      resolution node16 (emitting the JS the next steps run), bundler and nodenext;
 *   3. a workflow on waymark/testing, then on waymark/local (SQLite), then the `waymark` bin
 *      lists that run from the journal file;
 *   4. CommonJS: require() of the package at run time;
 *   5. a DurableFunction stack from waymark/cdk, synthesized with the construct's real esbuild
 *      bundling of the project's Lambda entry;
 *   6. the Lambda entry bundled by esbuild as the construct does (SDK external): no static SDK
 *      import, and the bundle loads in plain Node;
 *   7. waymark/ai: its types under node16 and bundler (with the DOM lib and @types/json-schema,
 *      which the AI SDK's own declarations need), and an AI SDK agent (the SDK's mock model) on
 *      waymark/testing, approval included;
 *   8. the optional peers removed (aws-cdk-lib, constructs, better-sqlite3, ai, @ai-sdk/provider):
 *      the Lambda subpaths still load and bundle, and waymark/local says which package to install.
 *
 * Run: npm run test:package (in .ci/run). Keep the folder with WAYMARK_KEEP_CONSUMER=1.
 */
import { execFileSync } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const repo = fileURLToPath(new URL("../../", import.meta.url));
const fixture = fileURLToPath(new URL("./fixture/", import.meta.url));
const require = createRequire(join(repo, "package.json"));

/** The versions the repository tests with, so the consumer is pinned to the same. */
function version(name: string): string {
  return (require(`${name}/package.json`) as { version: string }).version;
}

const results: Array<{ name: string; ok: boolean }> = [];

function sh(cwd: string, command: string, args: string[], env: NodeJS.ProcessEnv = {}): string {
  return execFileSync(command, args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...env }, maxBuffer: 64 * 1024 * 1024 });
}

function step(name: string, run: () => string | void): void {
  const started = Date.now();
  process.stdout.write(`- ${name} … `);
  try {
    const out = run();
    results.push({ name, ok: true });
    console.log(`ok (${((Date.now() - started) / 1000).toFixed(1)} s)`);
    if (out && out.trim()) console.log(out.trim().replace(/^/gm, "    "));
  } catch (err) {
    results.push({ name, ok: false });
    console.log("FAILED");
    // A child's stderr (a compiler's errors, a stack) is kept to its last lines: minified
    // dependencies print whole files in a stack trace.
    const e = err as { stdout?: string; stderr?: string; message?: string };
    const tail = (text: string) => text.trim().split("\n").slice(-40).map((l) => l.slice(0, 400)).join("\n");
    console.log(tail(String(e.stdout ?? "")).replace(/^/gm, "    "));
    console.log(tail(String(e.stderr ?? "")).replace(/^/gm, "    "));
    console.log(String(e.message ?? err).split("\n")[0]?.replace(/^/gm, "    "));
  }
}

function expectThat(condition: boolean, message: string): void {
  if (!condition) throw new Error(message);
}

const work = mkdtempSync(join(tmpdir(), "waymark-consumer-"));
const project = join(work, "project");
cpSync(fixture, project, { recursive: true });
// The bundle's SDK imports: the Lambda runtime provides the SDK, so the project must have it.
const bundleArgs = ["esbuild", "src/lambda.ts", "--bundle", "--platform=node", "--format=esm", "--target=node22", "--minify", "--external:@aws-sdk/*", "--outfile=lambda-bundle/index.mjs",
  "--banner:js=import { createRequire as __waymarkCreateRequire } from 'node:module'; const require = __waymarkCreateRequire(import.meta.url);"];

function checkBundle(): string {
  sh(project, "npx", bundleArgs);
  const code = readFileSync(join(project, "lambda-bundle/index.mjs"), "utf8");
  const staticSdk = [...code.matchAll(/\bfrom\s*["'](@aws-sdk\/[^"']+)["']/g)].map((m) => m[1]);
  expectThat(staticSdk.length === 0, `static SDK imports in the Lambda bundle: ${staticSdk.join(", ")}`);
  expectThat(!code.includes("better-sqlite3") && !code.includes("aws-cdk-lib"), "the Lambda bundle pulls in waymark/local or waymark/cdk");
  const loaded = sh(project, "node", ["--input-type=module", "-e", "const m = await import('./lambda-bundle/index.mjs'); process.stdout.write(typeof m.handler)"]);
  expectThat(loaded === "function", `the bundle's handler is ${loaded}`);
  return `lambda-bundle/index.mjs: ${(code.length / 1024).toFixed(1)} KiB minified, loads in plain Node, no static SDK import`;
}

try {
  console.log(`Waymark consumer test in ${project} (node ${process.version})`);
  let tarball = "";
  step("npm pack (prepack builds dist/)", () => {
    const out = JSON.parse(sh(repo, "npm", ["pack", "--json", "--pack-destination", work])) as Array<{ filename: string; files: Array<{ path: string }> }>;
    const packed = out[0];
    if (!packed) throw new Error("npm pack printed no file");
    tarball = join(work, packed.filename);
    const files = packed.files.map((f) => f.path);
    const stray = files.filter((f) => /^(test|bench|\.ci|lib|infra|functions)\//.test(f) || f.endsWith(".db") || /(^|\/)app\.js$/.test(f));
    expectThat(stray.length === 0, `the tarball ships ${stray.join(", ")}`);
    for (const need of ["dist/lib/index.js", "dist/lib/index.d.ts", "dist/lib/ai/index.js", "dist/lib/ai/index.d.ts", "dist/infra/index.js", "dist/lib/cli/main.js", "bin/waymark.mjs", "package.json"]) {
      expectThat(files.includes(need), `the tarball lacks ${need}`);
    }
    return `${packed.filename}: ${files.length} files`;
  });

  step("npm install the tarball, zod, TypeScript, esbuild, aws-cdk-lib, constructs, better-sqlite3, ai, @ai-sdk/provider", () => {
    const deps = ["zod", "typescript", "esbuild", "@types/node", "aws-cdk-lib", "constructs", "better-sqlite3", "@types/better-sqlite3", "ai", "@ai-sdk/provider"].map((n) => `${n}@${version(n)}`);
    // The AI SDK's declarations import json-schema's types; its own package does not bring them.
    sh(project, "npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error", tarball, ...deps, "@types/json-schema@^7.0.15"]);
  });

  step("tsc --strict, moduleResolution node16 (emits out/)", () => sh(project, "npx", ["tsc", "-p", "tsconfig.json"]));
  step("tsc --strict, moduleResolution bundler", () => sh(project, "npx", ["tsc", "-p", "tsconfig.bundler.json"]));
  step("tsc --strict, moduleResolution nodenext (with a CommonJS .cts file)", () => sh(project, "npx", ["tsc", "-p", "tsconfig.nodenext.json"]));
  step("tsc --strict, waymark/ai with the AI SDK, node16 (emits out/agent.js) and bundler", () => {
    sh(project, "npx", ["tsc", "-p", "tsconfig.ai.json"]);
    sh(project, "npx", ["tsc", "-p", "tsconfig.ai.bundler.json"]);
  });
  step("a workflow on waymark/testing", () => sh(project, "node", ["out/testing.js"]));
  step("an AI SDK agent on waymark/ai (the SDK's mock model), approved, on waymark/testing", () => sh(project, "node", ["out/agent.js"]));
  const journal = join(work, "journal.db");
  step("a workflow on waymark/local (SQLite)", () => sh(project, "node", ["out/local.js", journal]));
  step("the waymark bin lists that run", () => {
    const out = sh(project, "npx", ["waymark", "runs", "list", "--file", journal]);
    expectThat(out.includes("greet-1") && out.includes("completed"), `waymark runs list printed: ${out}`);
    return out;
  });
  step("CommonJS: require('waymark') at run time", () => sh(project, "node", ["cjs/run.cjs"]));
  step("a DurableFunction stack from waymark/cdk, bundled by the construct", () => sh(project, "node", ["out/stack.js", join(work, "cdk.out")]));
  step("the Lambda entry bundled with esbuild", checkBundle);

  step("npm uninstall the optional peers (aws-cdk-lib, constructs, better-sqlite3, ai, @ai-sdk/provider)", () => {
    sh(project, "npm", ["uninstall", "--no-audit", "--no-fund", "--loglevel=error", "aws-cdk-lib", "constructs", "better-sqlite3", "@types/better-sqlite3", "ai", "@ai-sdk/provider"]);
  });
  step("without them: the Lambda subpaths load, waymark/local names its missing package", () => sh(project, "node", ["out/lambda-only.js"]));
  step("without them: the Lambda entry still bundles and loads", checkBundle);
} finally {
  if (process.env.WAYMARK_KEEP_CONSUMER) console.log(`kept ${work}`);
  else rmSync(work, { recursive: true, force: true });
}

const failed = results.filter((r) => !r.ok).length;
console.log(`\nconsumer: ${results.length - failed} passed, ${failed} failed`);
process.exitCode = failed === 0 && results.length > 0 ? 0 : 1;
