/**
 * Executes the samples of a project (test/docs/samples.ts says which and how): the modules in one
 * child process (test/docs/support/run-modules.ts), the `*.test.ts` files in one vitest run, both
 * at once. Answers what failed, each at its sample's line in the page.
 */
import { spawn } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import type { SampleProject } from "./samples.ts";
import type { ModuleReport, PlannedModule } from "./support/run-modules.ts";

const RUNNER = fileURLToPath(new URL("./support/run-modules.ts", import.meta.url));

/** What a runnable module sample says it prints: the `// → text` of its `console.log` lines. */
export function expectedOutput(code: string): string[] {
  const out: string[] = [];
  for (const line of code.split("\n")) {
    const m = /console\.log\(.*\/\/ → (.*)$/.exec(line);
    if (m?.[1] !== undefined) out.push(m[1].trimEnd());
  }
  return out;
}

function spawnAsync(args: string[], cwd: string, env: NodeJS.ProcessEnv, timeoutMs: number): Promise<{ status: number | null; stderr: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, args, { cwd, env, stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr = `${stderr}${d.toString()}`.slice(-20_000)));
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("close", (status) => {
      clearTimeout(timer);
      done({ status, stderr });
    });
  });
}

/** Executes every sample that is not a fragment or an example; answers what failed. */
export async function runSamples(project: SampleProject, env: NodeJS.ProcessEnv): Promise<string[]> {
  const failures: string[] = [];
  const tests: string[] = [];
  const modules: PlannedModule[] = [];
  for (const [path, { sample }] of project.files) {
    if (sample.example !== undefined) continue;
    if (path.endsWith(".test.ts")) tests.push(path);
    else if (sample.run && expectedOutput(sample.code).length === 0) failures.push(`${sample.page}:${sample.line}: a run sample shows what it prints (console.log(x); // → text)`);
    else modules.push({ path, cwd: dirname(path), body: sample.body, serves: sample.serves });
  }
  const [fromModules, fromTests] = await Promise.all([runModules(project, modules, env), tests.length > 0 ? runTests(project, tests, env) : []]);
  return [...failures, ...fromModules, ...fromTests];
}

async function runModules(project: SampleProject, modules: readonly PlannedModule[], env: NodeJS.ProcessEnv): Promise<string[]> {
  if (modules.length === 0) return [];
  const plan = join(project.root, "modules-plan.json");
  const reportPath = join(project.root, "modules-report.json");
  writeFileSync(plan, JSON.stringify(modules));
  const child = await spawnAsync(["--conditions=waymark-source", "--import", "tsx", RUNNER, plan, reportPath], project.root, env, 600_000);
  if (!existsSync(reportPath)) return [`the module samples' runner did not report (exit ${child.status}): ${child.stderr.slice(-3000)}`];
  const failures: string[] = [];
  for (const report of JSON.parse(readFileSync(reportPath, "utf8")) as ModuleReport[]) {
    const written = project.files.get(report.path);
    if (!written) continue;
    const { sample } = written;
    const where = `${sample.page}:${sample.line}`;
    if (report.error !== undefined) {
      failures.push(`${where}: ${report.error.split("\n").slice(0, 8).join("\n")}`);
      continue;
    }
    if (!sample.run) continue;
    const printed = report.printed.map((l) => l.trimEnd());
    while (printed.at(-1) === "") printed.pop();
    const expected = expectedOutput(sample.code);
    if (JSON.stringify(printed) !== JSON.stringify(expected)) failures.push(`${where}: printed\n  ${printed.join("\n  ")}\nwhere the sample says\n  ${expected.join("\n  ")}`);
  }
  return failures;
}

interface VitestReport {
  testResults: Array<{ name: string; status: string; message?: string; assertionResults: Array<{ fullName: string; status: string; failureMessages: string[] }> }>;
}

/** The test samples with vitest (no global setup: the samples need no AWS peers). */
async function runTests(project: SampleProject, tests: readonly string[], env: NodeJS.ProcessEnv): Promise<string[]> {
  const config = join(project.root, "vitest.samples.config.mjs");
  const include = tests.map((t) => relative(project.root, t).split("\\").join("/"));
  writeFileSync(
    config,
    `export default { resolve: { conditions: ["waymark-source"] }, ssr: { resolve: { conditions: ["waymark-source"] } }, test: { include: ${JSON.stringify(include)}, pool: "forks" } };\n`,
  );
  const report = join(project.root, "vitest-report.json");
  const vitest = join(dirname(createRequire(import.meta.url).resolve("vitest/package.json")), "vitest.mjs");
  const child = await spawnAsync([vitest, "run", "--root", project.root, "--config", config, "--reporter=json", `--outputFile=${report}`], project.root, env, 300_000);
  if (!existsSync(report)) return [`vitest did not report (exit ${child.status}): ${child.stderr.slice(0, 2000)}`];
  const result = JSON.parse(readFileSync(report, "utf8")) as VitestReport;
  const failures: string[] = [];
  for (const file of result.testResults) {
    const sample = project.files.get(file.name)?.sample;
    const where = sample ? `${sample.page}:${sample.line}` : file.name;
    if (file.assertionResults.length === 0) failures.push(`${where}: ran no test${file.message ? `: ${file.message.slice(0, 1000)}` : ""}`);
    for (const t of file.assertionResults) if (t.status !== "passed") failures.push(`${where}: "${t.fullName}" ${t.status}: ${t.failureMessages.join("\n").slice(0, 1000)}`);
  }
  for (const t of tests) if (!result.testResults.some((r) => r.name === t)) failures.push(`${relative(project.root, t)}: not run by vitest`);
  return failures;
}
