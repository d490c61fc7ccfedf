/**
 * Issue 20 item 2: `waymark dev x.ts` and every `--workflows x.ts` verb (runs start, check)
 * load a user's TypeScript module in a project with tsx installed. The CLI runs as users run
 * it, as JavaScript in a plain `node` process with no loader registered (built here with
 * esbuild, as the package's dist/ is built by tsc), so nothing but the CLI itself can make Node
 * load `.ts`. The old CLI imported the module, failed with ERR_UNKNOWN_FILE_EXTENSION,
 * registered tsx and imported the same URL again, which Node had cached as failed; `check`
 * never registered tsx at all.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { build, type BuildOptions } from "esbuild";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { until } from "../support/until.ts";

const repo = fileURLToPath(new URL("../../", import.meta.url));
const fixtures = fileURLToPath(new URL("./fixtures/", import.meta.url));
// Inside the repository's node_modules, so the CLI finds better-sqlite3 and tsx as an installed copy would.
const buildDir = join(repo, "node_modules", ".cache", "waymark-cli-test", String(process.pid));
const cli = join(buildDir, "bin.mjs");
const work = mkdtempSync(join(tmpdir(), "waymark-cli-ts-"));
const children: ChildProcess[] = [];
/** What bin/waymark.mjs does with the built CLI (dist/lib/cli/main.js), beside the build. */
const BIN = 'import { main } from "./main.mjs";\nprocess.exit(await main(process.argv.slice(2)));\n';
const CLI_BUILD: BuildOptions = { entryPoints: [join(repo, "lib/cli/main.ts")], bundle: true, platform: "node", format: "esm", target: "node20", conditions: ["waymark-source"], logLevel: "silent" };

beforeAll(async () => {
  mkdirSync(buildDir, { recursive: true });
  await build({
    ...CLI_BUILD,
    outfile: join(buildDir, "main.mjs"),
    external: ["better-sqlite3", "@aws-sdk/*", "tsx"],
    banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
  });
  writeFileSync(cli, BIN);
});

afterAll(() => {
  for (const child of children) if (child.exitCode === null) child.kill("SIGKILL");
  rmSync(buildDir, { recursive: true, force: true });
  rmSync(work, { recursive: true, force: true });
});

interface Exit {
  code: number | null;
  out: string;
  err: string;
}

/** The CLI in a plain node process; `waymark-source` so the fixtures' `waymark` is this repository's sources. */
function waymark(args: string[], cwd = work): { child: ChildProcess; exit: Promise<Exit>; output: () => string; errors: () => string } {
  const child = spawn(process.execPath, ["--conditions=waymark-source", cli, ...args], { cwd, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, NODE_OPTIONS: "" } });
  children.push(child);
  let out = "";
  let err = "";
  child.stdout?.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr?.on("data", (d: Buffer) => (err += d.toString()));
  const exit = new Promise<Exit>((resolve) => child.on("close", (code) => resolve({ code, out, err })));
  return { child, exit, output: () => out, errors: () => err };
}

describe("the CLI loads a TypeScript workflow module", () => {
  const journal = join(work, "dev", "journal.db");

  it("waymark dev x.ts (a ./x.js import of a .ts file) serves the module's workflow; runs start --workflows x.ts starts a run it executes", { timeout: 90_000 }, async () => {
    const dev = waymark(["dev", join(fixtures, "greet.ts"), "--port", "0", "--file", journal]);
    const url = await until("the dev server's URL", () => {
      if (dev.child.exitCode !== null) throw new Error(`waymark dev exited with ${dev.child.exitCode}: ${dev.errors()}`);
      return /dashboard: (http:\/\/\S+?)\/?$/m.exec(dev.output())?.[1];
    }, 300_000);
    const form = await fetch(`${url}/ui/start`);
    expect(form.status).toBe(200);
    expect(await form.text()).toContain("greet");
    expect(dev.output()).toContain("waymark dev: greet");

    const started = await waymark(["runs", "start", "greet", "--run-id", "g-1", "--input", '{"name":"ada"}', "--workflows", join(fixtures, "greet.ts"), "--file", journal]).exit;
    expect(started.err).toBe("");
    expect(started.code).toBe(0);
    expect(JSON.parse(started.out)).toMatchObject({ runId: "g-1", workflow: "greet", created: true });
    // The dev server's runtime picks the run up from the shared journal and finishes it.
    await until("g-1 to complete under waymark dev", async () => /g-1\s+greet\s+completed/.test((await waymark(["runs", "list", "--file", journal]).exit).out), 30_000, 200);

    dev.child.kill("SIGTERM");
    expect((await dev.exit).code).toBe(0);
  });

  it("waymark check --workflows x.ts replays an exported history on the module's code", async () => {
    const histories = join(work, "histories");
    mkdirSync(histories);
    const exported = await waymark(["runs", "history", "export", "g-1", "--out", join(histories, "g-1.json"), "--file", journal]).exit;
    expect(exported.code).toBe(0);
    const checked = await waymark(["check", "--histories", histories, "--workflows", join(fixtures, "greet.ts")]).exit;
    expect(checked.err).toBe("");
    expect(checked.code).toBe(0);
    expect(checked.out).toContain("1 of 1 histories replay on today's code");
  });

  it("an .mts module and a .ts module in one command", async () => {
    const started = await waymark(["runs", "start", "farewell", "--run-id", "f-1", "--input", '{"name":"ada"}', "--workflows", join(fixtures, "greet.ts"), "--workflows", join(fixtures, "farewell.mts"), "--file", journal]).exit;
    expect(started.err).toBe("");
    expect(started.code).toBe(0);
    expect(JSON.parse(started.out)).toMatchObject({ runId: "f-1", workflow: "farewell", created: true });
  });

  it("without tsx in the module's project: Node's own TypeScript support, or an error that says to install tsx", async () => {
    // A project outside the repository: no tsx to find from the module, none beside this CLI build.
    const project = mkdtempSync(join(tmpdir(), "waymark-no-tsx-"));
    writeFileSync(join(project, "package.json"), '{ "type": "module" }\n');
    writeFileSync(join(project, "plain.ts"), "export const answer: number = 42;\n");
    const outside = join(project, "bin.mjs");
    await build({ ...CLI_BUILD, outfile: join(project, "main.mjs"), external: ["better-sqlite3", "@aws-sdk/*"] });
    writeFileSync(outside, BIN);
    const child = spawn(process.execPath, [outside, "dashboard", "--file", join(project, "none.db"), "--workflows", join(project, "plain.ts")], { cwd: project, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, NODE_OPTIONS: "" } });
    children.push(child);
    let err = "";
    child.stderr?.on("data", (d: Buffer) => (err += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
    expect(code).toBe(2);
    const nodeStripsTypes = Boolean((process.features as { typescript?: unknown }).typescript);
    // With Node's own loader the module loads and is found to export no workflow; without, the hint.
    expect(err).toContain(nodeStripsTypes ? "plain.ts exports no workflow made by durable()" : "install tsx in the project (npm install -D tsx)");
  });
});
