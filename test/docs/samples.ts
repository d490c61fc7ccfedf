/**
 * The docs' code samples: every ```ts block of a markdown page, and the fence words that say
 * what the samples test does with it (test/docs/samples.test.ts; docs/testing.md explains them to
 * a writer). After `ts`:
 *
 * - `file=<path>`: the block is that file of its page's project (a sample may import another by
 *   its path; `./order-flow.ts` and `./services.ts` are there unless the page writes its own:
 *   functions/order-flow.ts and test/docs/support/services.ts). It is compiled and executed: a
 *   `*.test.ts` under vitest, every test passing; any other module imported in a child process,
 *   where it must not throw.
 * - `run`: executed, and its `console.log(x); // → text` lines are what it must print.
 *   Without `file=`, the block is a module of its own.
 * - `body`: the block is a workflow's body: compiled inside `durable(…, async (input, step) =>
 *   { … })`, with the names it uses from the package and from ./services.ts imported, and run on
 *   `createTestRuntime` (with a webhook secret) to its end, virtual time advanced 30 days.
 * - `serves`: the module starts a server on `process.env.PORT` (set to a free port): it must
 *   answer `GET /` once its import has finished, and is stopped afterwards.
 * - `example=<Export>`: a TSDoc `@example` that docs/api shows (scripts/api-docs/): compiled, with
 *   the names it uses from its page's entry point and from test/docs/support/stand-ins.ts
 *   imported; wrapped as a workflow's body when it uses `step` without defining it.
 * - `fragment: <reason>`: not compiled, and why.
 *
 * Anything else is an error, and so is a TypeScript block fenced other than `ts`.
 */
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { preludeOf } from "./samples-prelude.ts";

export interface Sample {
  /** The page, relative to the repository (`docs/guides/fan-out.md`). */
  page: string;
  /** The 1-based line of the opening fence. */
  line: number;
  code: string;
  file: string | undefined;
  run: boolean;
  body: boolean;
  serves: boolean;
  /** The export whose TSDoc example this is. */
  example: string | undefined;
  fragment: string | undefined;
}

const TS_LANGS = new Set(["ts", "typescript", "tsx", "mts", "cts"]);
const WORDS = "file=<path>, run, body, serves, example=<Export>, or fragment: <reason>";

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
      const sample: Sample = { page, line: i + 1, code: `${body.join("\n")}\n`, file: undefined, run: false, body: false, serves: false, example: undefined, fragment: undefined };
      const attrs = info.trim().slice(2).trim();
      if (attrs.startsWith("fragment")) {
        const reason = /^fragment:\s*(\S.*)$/.exec(attrs)?.[1];
        if (reason === undefined) problems.push(`${where}: a fragment says why (\`\`\`ts fragment: <reason>)`);
        sample.fragment = reason ?? "";
      } else {
        for (const word of rest) {
          if (word === "run") sample.run = true;
          else if (word === "body") sample.body = true;
          else if (word === "serves") sample.serves = true;
          else if (word.startsWith("file=") && word.length > 5) sample.file = word.slice(5);
          else if (word.startsWith("example=") && word.length > 8) sample.example = word.slice(8);
          else problems.push(`${where}: unknown fence word "${word}" (${WORDS})`);
        }
        if (sample.body && (sample.file !== undefined || sample.example !== undefined)) problems.push(`${where}: a body is a file of its own (no file= or example=)`);
        if (sample.file?.endsWith(".test.ts") && (sample.serves || sample.body)) problems.push(`${where}: a test file neither serves nor is a body`);
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

export interface SampleFile {
  sample: Sample;
  /** Lines written above the sample's first line (its prelude). */
  offset: number;
}

export interface SampleProject {
  root: string;
  /** Every file written for a sample, by absolute path. */
  files: Map<string, SampleFile>;
  problems: string[];
}

/** Where a sample is written in its page's folder. */
function fileName(s: Sample): string {
  if (s.file !== undefined) return s.file;
  if (s.example !== undefined) return `example-${s.line}-${s.example.replace(/[^A-Za-z0-9]+/g, "-")}.ts`;
  return `${s.body ? "body" : "sample"}-${s.line}.ts`;
}

/**
 * Writes the samples that are not fragments into `root/<page>/`, with the support modules a
 * page does not write itself and a `functions` link (the CDK samples' `entry`). `repo` is where
 * functions/ and test/docs/support/ are.
 */
export function writeProjects(root: string, samples: readonly Sample[], repo: string): SampleProject {
  const files = new Map<string, SampleFile>();
  const problems: string[] = [];
  const pages = new Map<string, Sample[]>();
  for (const s of samples) if (s.fragment === undefined) pages.set(s.page, [...(pages.get(s.page) ?? []), s]);
  for (const [page, list] of pages) {
    const dir = join(root, slug(page));
    mkdirSync(dir, { recursive: true });
    for (const s of list) {
      const path = join(dir, fileName(s));
      if (files.has(path)) problems.push(`${page}:${s.line}: another sample of this page is already file=${s.file}`);
      mkdirSync(dirname(path), { recursive: true });
      const prelude = preludeOf(s, repo);
      writeFileSync(path, `${prelude.text}${s.code}${prelude.end}`);
      files.set(path, { sample: s, offset: prelude.lines });
    }
    const support: Record<string, string> = {
      "order-flow.ts": join(repo, "functions", "order-flow.ts"),
      "services.ts": join(repo, "test", "docs", "support", "services.ts"),
      "stand-ins.ts": join(repo, "test", "docs", "support", "stand-ins.ts"),
      "stand-ins-cdk.ts": join(repo, "test", "docs", "support", "stand-ins-cdk.ts"),
      "stand-ins-aws.ts": join(repo, "test", "docs", "support", "stand-ins-aws.ts"),
    };
    for (const [name, target] of Object.entries(support)) {
      const path = join(dir, name);
      if (files.has(path)) continue;
      let rel = relative(dir, target).split("\\").join("/");
      if (!rel.startsWith(".")) rel = `./${rel}`;
      writeFileSync(path, `export * from "${rel}";\n`);
    }
    symlinkSync(join(repo, "functions"), join(dir, "functions"), "dir");
  }
  return { root, files, problems };
}
