/**
 * The API reference, generated from the TSDoc of the package's public entry points (package.json
 * "exports"), with the TypeScript compiler API: one markdown page per entry point under
 * docs/api/, each exported symbol with its kind, its declaration (bodies, private members and
 * comments left out), its TSDoc summary, `@param`s, `@returns`, `@throws`, `@default`s of its
 * members and `@example`s. The output depends only on the sources: symbols sorted by name,
 * nothing from the clock or the machine.
 *
 * `npm run docs:api` writes the pages; test/docs/api-docs.test.ts regenerates them in memory and
 * fails when docs/api/ is stale or an exported symbol has no TSDoc.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { renderEntryPage, renderIndexPage, type DocumentedSymbol, type EntryDoc } from "./render.ts";
import { declarationText, kindOf, membersOf, tagsOf, textOf } from "./symbols.ts";

export const REPO = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** The entry points, in package.json's order: the import path and the page it gets. */
export interface EntryPoint {
  specifier: string;
  source: string;
  page: string;
}

/** The public entry points: package.json "exports" with a `waymark-source` file (not ./package.json). */
export function entryPoints(repo = REPO): EntryPoint[] {
  const pkg = JSON.parse(readFileSync(join(repo, "package.json"), "utf8")) as { name: string; exports: Record<string, unknown> };
  const entries: EntryPoint[] = [];
  for (const [subpath, target] of Object.entries(pkg.exports)) {
    if (typeof target !== "object" || target === null) continue;
    const source = (target as Record<string, unknown>)["waymark-source"];
    if (typeof source !== "string") continue;
    const specifier = subpath === "." ? pkg.name : `${pkg.name}/${subpath.slice(2)}`;
    const page = subpath === "." ? "waymark.md" : `${subpath.slice(2)}.md`;
    entries.push({ specifier, source: join(repo, source), page });
  }
  return entries;
}

/** What a run of the generator gives: the pages by path under docs/api/, and the symbols without TSDoc. */
export interface ApiDocs {
  pages: Map<string, string>;
  undocumented: string[];
}

function compilerOptions(repo: string): ts.CompilerOptions {
  const configPath = join(repo, "tsconfig.json");
  const config = ts.readConfigFile(configPath, (path) => ts.sys.readFile(path));
  if (config.error) throw new Error(ts.flattenDiagnosticMessageText(config.error.messageText, "\n"));
  return ts.parseJsonConfigFileContent(config.config, ts.sys, repo, undefined, configPath).options;
}

/** Generates every page in memory. */
export function generateApiDocs(repo = REPO): ApiDocs {
  const entries = entryPoints(repo);
  const program = ts.createProgram(entries.map((e) => e.source), compilerOptions(repo));
  const checker = program.getTypeChecker();
  const pages = new Map<string, string>();
  const undocumented: string[] = [];
  const docs: EntryDoc[] = [];
  for (const entry of entries) {
    const file = program.getSourceFile(entry.source);
    if (!file) throw new Error(`${entry.source}: not in the program`);
    const moduleSymbol = checker.getSymbolAtLocation(file);
    if (!moduleSymbol) throw new Error(`${entry.source}: not a module`);
    const symbols: DocumentedSymbol[] = [];
    for (const exported of checker.getExportsOfModule(moduleSymbol)) {
      const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
      const declaration = symbol.declarations?.[0];
      if (!declaration) continue;
      const summary = textOf(symbol.getDocumentationComment(checker));
      const tags = tagsOf(symbol.getJsDocTags(checker));
      const source = relative(repo, declaration.getSourceFile().fileName).split("\\").join("/");
      if (summary === "" && tags.length === 0) undocumented.push(`${entry.specifier}: ${exported.name} (${source})`);
      symbols.push({
        name: exported.name,
        kind: kindOf(declaration),
        source,
        declaration: declarationText(symbol, exported.name, checker),
        summary,
        tags,
        members: membersOf(symbol, checker),
      });
    }
    symbols.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const overview = textOf(file.statements.length > 0 ? moduleComment(file) : []);
    const doc: EntryDoc = { entry: entry.specifier, page: entry.page, overview, symbols };
    docs.push(doc);
    pages.set(entry.page, renderEntryPage(doc));
  }
  pages.set("README.md", renderIndexPage(docs));
  return { pages, undocumented };
}

/** The file's leading TSDoc (the module's own comment), when it is not a statement's. */
function moduleComment(file: ts.SourceFile): ts.SymbolDisplayPart[] {
  const text = file.getFullText();
  const ranges = ts.getLeadingCommentRanges(text, 0) ?? [];
  const first = ranges.find((r) => text.slice(r.pos, r.pos + 3) === "/**");
  if (!first) return [];
  const body = text
    .slice(first.pos + 3, first.end - 2)
    .split("\n")
    .map((line) => line.replace(/^\s*\* ?/, ""))
    .join("\n")
    .trim();
  return [{ kind: "text", text: body }];
}

/** The pages under `<repo>/docs/api/` that differ from `pages`, are missing, or should not be there. */
export function stalePages(pages: ReadonlyMap<string, string>, repo = REPO): string[] {
  const dir = join(repo, "docs", "api");
  const stale: string[] = [];
  for (const [name, text] of pages) {
    const path = join(dir, name);
    if (!existsSync(path) || readFileSync(path, "utf8") !== text) stale.push(name);
  }
  const existing = existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith(".md")) : [];
  for (const name of existing) if (!pages.has(name)) stale.push(name);
  return stale.sort();
}
