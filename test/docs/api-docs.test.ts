/**
 * docs/api/ is the TSDoc of the public entry points, regenerated in memory here
 * (scripts/api-docs/): the committed pages must be exactly what the generator writes, and every
 * exported symbol must have TSDoc. A small project in a temp folder shows both checks fail.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { generateApiDocs, stalePages } from "../../scripts/api-docs/generate.ts";

describe("the API reference (docs/api)", () => {
  const docs = generateApiDocs();

  it("has a page per entry point of package.json, and an index", () => {
    expect([...docs.pages.keys()].sort()).toEqual(["README.md", "ai.md", "aws.md", "cdk.md", "http.md", "local.md", "testing.md", "waymark.md"]);
    expect(docs.pages.get("local.md")).toContain("## `createLocalRuntime`");
  });

  it("is up to date with the TSDoc (else: npm run docs:api)", () => {
    expect(stalePages(docs.pages)).toEqual([]);
  });

  it("documents every exported symbol (these lack TSDoc)", () => {
    expect(docs.undocumented).toEqual([]);
  });
});

describe("the API reference's checks fail on", () => {
  const repo = mkdtempSync(join(tmpdir(), "waymark-api-docs-"));
  afterAll(() => rmSync(repo, { recursive: true, force: true }));
  mkdirSync(join(repo, "src"));
  writeFileSync(join(repo, "package.json"), JSON.stringify({ name: "demo", exports: { ".": { "waymark-source": "./src/index.ts" } } }));
  writeFileSync(join(repo, "tsconfig.json"), JSON.stringify({ compilerOptions: { strict: true, module: "NodeNext", moduleResolution: "NodeNext", noEmit: true } }));
  writeFileSync(join(repo, "src", "index.ts"), "/** Adds. @example\n```ts\nadd(1, 2);\n```\n */\nexport function add(a: number, b: number): number { return a + b; }\nexport const forgotten = 1;\n");

  it("an export without TSDoc, named", () => {
    const { pages, undocumented } = generateApiDocs(repo);
    expect(undocumented).toEqual(["demo: forgotten (src/index.ts)"]);
    expect(pages.get("waymark.md")).toContain("function add(a: number, b: number): number;");
  });

  it("pages that are missing, changed or left over", () => {
    const { pages } = generateApiDocs(repo);
    expect(stalePages(pages, repo)).toEqual(["README.md", "waymark.md"]);
    mkdirSync(join(repo, "docs", "api"), { recursive: true });
    for (const [name, text] of pages) writeFileSync(join(repo, "docs", "api", name), text);
    expect(stalePages(pages, repo)).toEqual([]);
    writeFileSync(join(repo, "docs", "api", "waymark.md"), `${pages.get("waymark.md")}edited by hand\n`);
    writeFileSync(join(repo, "docs", "api", "old.md"), "a page of an entry point that went\n");
    expect(stalePages(pages, repo)).toEqual(["old.md", "waymark.md"]);
  });
});
