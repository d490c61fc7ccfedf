/**
 * The docs' code samples as projects: every ```ts block of a markdown page is extracted into a
 * folder of its page, compiled against the package's sources (the `waymark-source` condition,
 * the repository's tsconfig), and, when its fence says `run`, executed — a module with `tsx`,
 * its `console.log(x); // → text` lines checked against what it prints; a `*.test.ts` with
 * vitest, every test passing. A block that is only an excerpt says so and why:
 * ```` ```ts fragment: inside a workflow body ````.
 *
 * Fence info, after `ts`: `file=<path>` (where the block goes in its page's project; a sample
 * may import another by that path, and `./order-flow.ts` / `./services.ts` are there unless the
 * page writes its own: functions/order-flow.ts and test/docs/support/services.ts), `run`, or
 * `fragment: <reason>`. Anything else is an error, and so is a TypeScript block fenced other
 * than `ts`.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative } from "node:path";
import ts from "typescript";

export interface Sample {
  /** The page, relative to the repository (`docs/guides/fan-out.md`). */
  page: string;
  /** The 1-based line of the opening fence. */
  line: number;
  code: string;
  file: string | undefined;
  run: boolean;
  fragment: string | undefined;
}

const TS_LANGS = new Set(["ts", "typescript", "tsx", "mts", "cts"]);

/** The ```ts blocks of a page, and what is wrong with their fences. */
export function extractSamples(page: string, markdown: string): { samples: Sample[]; problems: string[] } {
  const samples: Sample[] = [];
  const problems: string[] = [];
  const lines = markdown.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,})(.*)$/.exec(lines[i] ?? "");
    if (!open) continue;
    const [, indent = "", ticks = "", info = ""] = open;
    let end = i + 1;
    while (end < lines.length && !new RegExp(`^\\s*${ticks}\\s*$`).test(lines[end] ?? "")) end++;
    const body = lines.slice(i + 1, end).map((l) => (l.startsWith(indent) ? l.slice(indent.length) : l.trimStart()));
    const where = `${page}:${i + 1}`;
    const [lang = "", ...rest] = info.trim().split(/\s+/);
    if (TS_LANGS.has(lang) && lang !== "ts") problems.push(`${where}: fence TypeScript as \`\`\`ts, not \`\`\`${lang}`);
    if (lang === "ts") {
      const sample: Sample = { page, line: i + 1, code: `${body.join("\n")}\n`, file: undefined, run: false, fragment: undefined };
      const attrs = info.trim().slice(2).trim();
      if (attrs.startsWith("fragment")) {
        const reason = /^fragment:\s*(\S.*)$/.exec(attrs)?.[1];
        if (reason === undefined) problems.push(`${where}: a fragment says why (\`\`\`ts fragment: <reason>)`);
        sample.fragment = reason ?? "";
      } else {
        for (const word of rest) {
          if (word === "run") sample.run = true;
          else if (word.startsWith("file=") && word.length > 5) sample.file = word.slice(5);
          else problems.push(`${where}: unknown fence word "${word}" (file=<path>, run, or fragment: <reason>)`);
        }
      }
      samples.push(sample);
    }
    i = end;
  }
  return { samples, problems };
}

/** A page's folder name in the samples root. */
function slug(page: string): string {
  return page.replace(/\.md$/, "").replace(/[^A-Za-z0-9]+/g, "-");
}

export interface SampleProject {
  root: string;
  /** Every file written for a sample, by absolute path, with its sample. */
  files: Map<string, Sample>;
  problems: string[];
}

/**
 * Writes the samples that are not fragments into `root/<page>/`, with the support modules a
 * page does not write itself. `repo` is where functions/ and test/docs/support/ are.
 */
export function writeProjects(root: string, samples: readonly Sample[], repo: string): SampleProject {
  const files = new Map<string, Sample>();
  const problems: string[] = [];
  const pages = new Map<string, Sample[]>();
  for (const s of samples) if (s.fragment === undefined) pages.set(s.page, [...(pages.get(s.page) ?? []), s]);
  for (const [page, list] of pages) {
    const dir = join(root, slug(page));
    for (const s of list) {
      const path = join(dir, s.file ?? `sample-${s.line}.ts`);
      if (files.has(path)) problems.push(`${page}:${s.line}: another sample of this page is already file=${s.file}`);
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, s.code);
      files.set(path, s);
    }
    const support: Record<string, string> = {
      "order-flow.ts": join(repo, "functions", "order-flow.ts"),
      "services.ts": join(repo, "test", "docs", "support", "services.ts"),
    };
    for (const [name, target] of Object.entries(support)) {
      const path = join(dir, name);
      if (files.has(path)) continue;
      let rel = relative(dir, target).split("\\").join("/");
      if (!rel.startsWith(".")) rel = `./${rel}`;
      writeFileSync(path, `export * from "${rel}";\n`);
    }
  }
  return { root, files, problems };
}

function compilerOptions(repo: string): ts.CompilerOptions {
  const configPath = join(repo, "tsconfig.json");
  const config = ts.readConfigFile(configPath, (p) => ts.sys.readFile(p));
  return { ...ts.parseJsonConfigFileContent(config.config, ts.sys, repo, undefined, configPath).options, noEmit: true };
}

/** Type errors in the samples, each as `page:line: message` (the line in the page). */
export function typecheck(project: SampleProject, repo: string): string[] {
  const program = ts.createProgram([...project.files.keys()], compilerOptions(repo));
  const errors: string[] = [];
  for (const d of ts.getPreEmitDiagnostics(program)) {
    const message = ts.flattenDiagnosticMessageText(d.messageText, "\n");
    const sample = d.file ? project.files.get(d.file.fileName) : undefined;
    if (!d.file || !sample) {
      // A diagnostic in a support file or the sources: shown where it is.
      if (d.file && !d.file.fileName.startsWith(project.root)) continue;
      errors.push(`${d.file ? relative(repo, d.file.fileName) : "(program)"}: ${message}`);
      continue;
    }
    const { line } = d.file.getLineAndCharacterOfPosition(d.start ?? 0);
    errors.push(`${sample.page}:${sample.line + 1 + line}: ${message}`);
  }
  return errors;
}

/** What a runnable module sample says it prints: the `// → text` of its `console.log` lines. */
export function expectedOutput(code: string): string[] {
  const out: string[] = [];
  for (const line of code.split("\n")) {
    const m = /console\.log\(.*\/\/ → (.*)$/.exec(line);
    if (m?.[1] !== undefined) out.push(m[1].trimEnd());
  }
  return out;
}

/** Runs the `run` samples; answers what failed. */
export function runSamples(project: SampleProject, env: NodeJS.ProcessEnv): string[] {
  const failures: string[] = [];
  const tests: string[] = [];
  for (const [path, sample] of project.files) {
    if (!sample.run) continue;
    const where = `${sample.page}:${sample.line}`;
    if (path.endsWith(".test.ts")) {
      tests.push(path);
      continue;
    }
    const expected = expectedOutput(sample.code);
    if (expected.length === 0) {
      failures.push(`${where}: a run sample shows what it prints (console.log(x); // → text)`);
      continue;
    }
    const child = spawnSync(process.execPath, ["--conditions=waymark-source", "--import", "tsx", path], { cwd: dirname(path), env, encoding: "utf8", timeout: 120_000 });
    const printed = child.stdout.trimEnd().split("\n").map((l) => l.trimEnd());
    if (child.status !== 0) failures.push(`${where}: exited ${child.status ?? child.signal}: ${child.stderr.trim().split("\n").slice(0, 8).join("\n")}`);
    else if (JSON.stringify(printed) !== JSON.stringify(expected)) failures.push(`${where}: printed\n  ${printed.join("\n  ")}\nwhere the sample says\n  ${expected.join("\n  ")}`);
  }
  if (tests.length > 0) failures.push(...runTests(project, tests, env));
  return failures;
}

interface VitestReport {
  numTotalTests: number;
  numFailedTests: number;
  testResults: Array<{ name: string; status: string; message?: string; assertionResults: Array<{ fullName: string; status: string; failureMessages: string[] }> }>;
}

/** The test samples with vitest (no global setup: the samples need no AWS peers). */
function runTests(project: SampleProject, tests: readonly string[], env: NodeJS.ProcessEnv): string[] {
  const config = join(project.root, "vitest.samples.config.mjs");
  const include = tests.map((t) => relative(project.root, t).split("\\").join("/"));
  writeFileSync(
    config,
    `export default { resolve: { conditions: ["waymark-source"] }, ssr: { resolve: { conditions: ["waymark-source"] } }, test: { include: ${JSON.stringify(include)}, pool: "forks" } };\n`,
  );
  const report = join(project.root, "vitest-report.json");
  const vitest = join(dirname(createRequire(import.meta.url).resolve("vitest/package.json")), "vitest.mjs");
  const child = spawnSync(process.execPath, [vitest, "run", "--root", project.root, "--config", config, "--reporter=json", `--outputFile=${report}`], { cwd: project.root, env, encoding: "utf8", timeout: 240_000 });
  if (!existsSync(report)) return [`vitest did not report (exit ${child.status}): ${child.stderr.slice(0, 2000)}`];
  const result = JSON.parse(readFileSync(report, "utf8")) as VitestReport;
  const failures: string[] = [];
  for (const file of result.testResults) {
    const sample = project.files.get(file.name);
    const where = sample ? `${sample.page}:${sample.line}` : file.name;
    if (file.assertionResults.length === 0) failures.push(`${where}: ran no test${file.message ? `: ${file.message.slice(0, 1000)}` : ""}`);
    for (const t of file.assertionResults) if (t.status !== "passed") failures.push(`${where}: "${t.fullName}" ${t.status}: ${t.failureMessages.join("\n").slice(0, 1000)}`);
  }
  for (const t of tests) if (!result.testResults.some((r) => r.name === t)) failures.push(`${relative(project.root, t)}: not run by vitest`);
  return failures;
}
