/**
 * Every ```ts block of README.md and docs/**\/*.md compiles against the package's sources, or is
 * marked a fragment with its reason (test/docs/samples.ts lists the fence words). Every block
 * that is a file runs: the test files under vitest, the modules in a child process (the CDK apps
 * synthesize, the dev server answers), the workflow bodies on the test runtime; what the `run`
 * blocks print must be what they say. The TSDoc examples docs/api shows compile too.
 * getting-started.md shows the scaffold's own files, so those blocks must equal
 * create-waymark/template's. The second part feeds broken pages through the same checks, to show
 * each one fails.
 *
 * The projects are written under the repository (so `waymark` resolves to its sources as the
 * package's own name) in a folder removed afterwards.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { extractSamples, type Sample, writeProjects } from "./samples.ts";
import { typecheck } from "./samples-compile.ts";
import { runSamples } from "./samples-run.ts";

const repo = fileURLToPath(new URL("../../", import.meta.url));
const scratch = mkdtempSync(join(repo, ".docs-samples-"));
const demoDir = mkdtempSync(join(tmpdir(), "waymark-docs-demo-"));
const env = { ...process.env, WAYMARK_DEMO_DIR: demoDir, WAYMARK_WEBHOOK_SECRET: "docs-samples-webhook-secret-0123456789", NODE_OPTIONS: "" };
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
  // Started now, so the child processes run while the next tests compile.
  const ran = runSamples(project, env).catch((err: unknown) => [String(err)]);

  it("mark every ```ts block as compiled, run, or a fragment with its reason", () => {
    expect([...problems, ...project.problems]).toEqual([]);
    expect(samples.filter((s) => s.fragment === undefined).length).toBeGreaterThan(140);
    // What is left uncompiled: the declarations docs/api prints (no bodies), nothing hand-written.
    expect([...new Set(samples.filter((s) => s.fragment !== undefined).map((s) => `${s.page.startsWith("docs/api/") ? "docs/api" : s.page}: ${s.fragment}`))]).toEqual([
      "docs/api: the declaration, generated from the source",
    ]);
    // Every TSDoc example docs/api shows is compiled.
    const api = samples.filter((s) => s.page.startsWith("docs/api/") && s.fragment === undefined);
    expect(api.length).toBeGreaterThan(100);
    expect(api.every((s) => s.example !== undefined)).toBe(true);
  });

  it("compile against the package's sources", () => {
    expect(typecheck(project, repo)).toEqual([]);
  });

  it("run: the README's example, getting started's test and the other runnable samples", async () => {
    const runnable = samples.filter((s) => s.run).map((s) => `${s.page} ${s.file}`);
    expect(runnable).toEqual(expect.arrayContaining(["README.md order-flow.ts", "docs/getting-started.md test/expense.test.ts"]));
    // Outside docs/api, every block that is not a fragment is executed (an example= is compiled only).
    const guides = samples.filter((s) => !s.page.startsWith("docs/api/") && s.fragment === undefined);
    expect(guides.filter((s) => s.example !== undefined).map((s) => `${s.page} ${s.example}`)).toEqual(["docs/guides/agents.md providers"]);
    expect(guides.filter((s) => s.serves).map((s) => `${s.page} ${s.file}`)).toEqual(["docs/guides/webhooks-and-approvals.md dev.ts"]);
    expect(await ran).toEqual([]);
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
      'fences.md:5: unknown fence word "runn" (file=<path>, run, body, serves, example=<Export>, or fragment: <reason>)',
      "fences.md:9: fence TypeScript as ```ts, not ```typescript",
    ]);
  });

  it("a sample that prints something else than it says, or throws", async () => {
    const { project } = check(
      "prints",
      "```ts run\nconsole.log(1 + 1); // → 3\n```\n\n```ts run\nthrow new Error(\"boom\");\nconsole.log(1); // → 1\n```\n",
    );
    const failures = await runSamples(project, env);
    expect(failures).toHaveLength(2);
    expect(failures[0]).toMatch(/^prints\.md:1: printed\n  2\nwhere the sample says\n  3$/);
    expect(failures[1]).toMatch(/^prints\.md:5: threw: Error: boom/);
  });

  it("a test sample whose assertion fails", async () => {
    const { project } = check("tests", '```ts file=x.test.ts run\nimport { expect, it } from "vitest";\nit("adds", () => expect(1 + 1).toBe(3));\n```\n');
    const failures = await runSamples(project, env);
    expect(failures).toHaveLength(1);
    expect(failures[0]).toMatch(/^tests\.md:1: "adds" failed: .*expected 2 to be 3/);
  });

  it("a body that does not finish", async () => {
    const { project } = check("bodies", "Text.\n\n```ts body\nawait step.run(\"fail\", () => {\n  throw new NonRetryableError(\"no\");\n});\n```\n");
    const failures = await runSamples(project, env);
    expect(failures).toHaveLength(1);
    expect(failures[0]).toMatch(/^bodies\.md:3: the body's run ended failed: .*no/);
  });

  it("a module that throws when imported, a server that answers nothing", async () => {
    const page = "```ts file=boom.ts\nthrow new Error(\"boom at import\");\n```\n\n```ts file=dev.ts serves\nconsole.log(process.env.PORT);\n```\n";
    const { project } = check("modules", page);
    const failures = await runSamples(project, env);
    expect(failures).toHaveLength(2);
    expect(failures[0]).toMatch(/^modules\.md:1: threw: Error: boom at import/);
    expect(failures[1]).toMatch(/^modules\.md:5: serves nothing on port \d+/);
  });

  it("a sample, a body or a TSDoc example that does not compile, or uses a name nothing defines, at its line in the page", () => {
    // One program for the three pages, as the docs' own samples are one program.
    const pages: Record<string, string> = {
      types: 'Text.\n\n```ts\nimport { durable } from "waymark";\nconst n: number = "one";\ndurable;\n```\n',
      bodies: 'Text.\n\n```ts body\nconst n: number = await step.run("one", () => "one");\n```\n',
      examples: '```ts example=durable\nconst flow = durable({ name: "x", input: Order }, async (order, step) => step.run("a", () => order.nope));\n```\n\n```ts example=Other\nawait undefinedThing.go();\n```\n',
    };
    const samples = Object.entries(pages).flatMap(([name, markdown]) => extractSamples(`${name}.md`, markdown).samples);
    const errors = typecheck(writeProjects(join(scratch, "compile"), samples, repo), repo);
    expect(errors.sort()).toEqual([
      expect.stringMatching(/^bodies\.md:4: Type 'string' is not assignable to type 'number'/),
      expect.stringMatching(/^examples\.md:2: Property 'nope' does not exist/),
      expect.stringMatching(/^examples\.md:6: Cannot find name 'undefinedThing'/),
      expect.stringMatching(/^types\.md:5: Type 'string' is not assignable to type 'number'/),
    ]);
  });
});
