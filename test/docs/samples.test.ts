/**
 * Every ```ts block of README.md and docs/**\/*.md compiles against the package's sources, or is
 * marked a fragment with its reason; the blocks marked `run` (the README's example, getting
 * started's workflow and test, …) run, and what they print or assert holds. getting-started.md
 * shows the scaffold's own files, so those blocks must equal create-waymark/template's. The
 * second part feeds broken pages through the same checks, to show each one fails.
 *
 * The projects are written under the repository (so `waymark` resolves to its sources as the
 * package's own name) in a folder removed afterwards.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { extractSamples, runSamples, type Sample, typecheck, writeProjects } from "./samples.ts";

const repo = fileURLToPath(new URL("../../", import.meta.url));
const scratch = mkdtempSync(join(repo, ".docs-samples-"));
const demoDir = mkdtempSync(join(tmpdir(), "waymark-docs-demo-"));
const env = { ...process.env, WAYMARK_DEMO_DIR: demoDir, NODE_OPTIONS: "" };
afterAll(() => {
  rmSync(scratch, { recursive: true, force: true });
  rmSync(demoDir, { recursive: true, force: true });
});

function markdownPages(): string[] {
  const pages = ["README.md"];
  const walk = (dir: string) => {
    for (const name of readdirSync(join(repo, dir)).sort()) {
      const path = `${dir}/${name}`;
      if (statSync(join(repo, path)).isDirectory()) walk(path);
      else if (name.endsWith(".md")) pages.push(path);
    }
  };
  walk("docs");
  return pages;
}

describe("the docs' samples", () => {
  const samples: Sample[] = [];
  const problems: string[] = [];
  for (const page of markdownPages()) {
    const found = extractSamples(page, readFileSync(join(repo, page), "utf8"));
    samples.push(...found.samples);
    problems.push(...found.problems);
  }
  const project = writeProjects(join(scratch, "docs"), samples, repo);

  it("mark every ```ts block as compiled, run, or a fragment with its reason", () => {
    expect([...problems, ...project.problems]).toEqual([]);
    expect(samples.filter((s) => s.fragment === undefined).length).toBeGreaterThan(20);
  });

  it("compile against the package's sources", () => {
    expect(typecheck(project, repo)).toEqual([]);
  });

  it("run: the README's example, getting started's test and the other runnable samples", () => {
    const runnable = samples.filter((s) => s.run).map((s) => `${s.page} ${s.file}`);
    expect(runnable).toEqual(expect.arrayContaining(["README.md order-flow.ts", "docs/getting-started.md test/expense.test.ts"]));
    expect(runSamples(project, env)).toEqual([]);
  });

  it("getting started shows the scaffold's files as they are", () => {
    const shown = samples.filter((s) => s.page === "docs/getting-started.md" && s.file !== undefined);
    expect(shown.map((s) => s.file)).toEqual(["src/expense.ts", "src/payments.ts", "test/expense.test.ts", "bin/app.ts"]);
    for (const s of shown) expect(s.code, s.file).toBe(readFileSync(join(repo, "create-waymark", "template", s.file ?? ""), "utf8"));
  });
});

describe("the samples' checks fail on", () => {
  const check = (name: string, markdown: string) => {
    const { samples, problems } = extractSamples(`${name}.md`, markdown);
    const project = writeProjects(join(scratch, name), samples, repo);
    return { samples, problems, project };
  };

  it("a fence without its reason, an unknown word, a ```typescript block", () => {
    const { problems } = check("fences", "```ts fragment\nx\n```\n\n```ts runn\nx\n```\n\n```typescript\nx\n```\n");
    expect(problems).toEqual([
      "fences.md:1: a fragment says why (```ts fragment: <reason>)",
      'fences.md:5: unknown fence word "runn" (file=<path>, run, or fragment: <reason>)',
      "fences.md:9: fence TypeScript as ```ts, not ```typescript",
    ]);
  });

  it("a sample that does not compile, at its line in the page", () => {
    const { project } = check("types", 'Text.\n\n```ts\nimport { durable } from "waymark";\nconst n: number = "one";\ndurable;\n```\n');
    const errors = typecheck(project, repo);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/^types\.md:5: Type 'string' is not assignable to type 'number'/);
  });

  it("a sample that prints something else than it says, or throws", () => {
    const { project } = check(
      "prints",
      "```ts run\nconsole.log(1 + 1); // → 3\n```\n\n```ts run\nthrow new Error(\"boom\");\nconsole.log(1); // → 1\n```\n",
    );
    const failures = runSamples(project, env);
    expect(failures).toHaveLength(2);
    expect(failures[0]).toMatch(/^prints\.md:1: printed\n  2\nwhere the sample says\n  3$/);
    expect(failures[1]).toMatch(/^prints\.md:5: exited 1: [\s\S]*boom/);
  });

  it("a test sample whose assertion fails", () => {
    const { project } = check("tests", '```ts file=x.test.ts run\nimport { expect, it } from "vitest";\nit("adds", () => expect(1 + 1).toBe(3));\n```\n');
    const failures = runSamples(project, env);
    expect(failures).toHaveLength(1);
    expect(failures[0]).toMatch(/^tests\.md:1: "adds" failed: .*expected 2 to be 3/);
  });
});
