/**
 * The one-line preludes of the samples that are not whole files: a `body` block is wrapped in a
 * workflow, and an `example=` block (a TSDoc example) gets imports for the names it uses and does
 * not define: from the package's entry points (its own page's first), then from
 * test/docs/support/services.ts (bodies, which run) or stand-ins.ts (examples, compiled only).
 * The prelude is one line, so a sample's line N is its file's line N + 1.
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import ts from "typescript";
import type { Sample } from "./samples.ts";

interface Exported {
  from: string;
  type: boolean;
}

const cache = new Map<string, Map<string, Exported>>();

/** The names a module exports (syntactically, following re-exports), and whether each is a type only. */
function exportsOf(file: string, into: Map<string, boolean>, seen: Set<string>): void {
  if (seen.has(file)) return;
  seen.add(file);
  const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.ES2022);
  const add = (name: string, type: boolean) => {
    if (!into.has(name) || into.get(name) === true) into.set(name, type);
  };
  const exported = (node: ts.Node) => ts.canHaveModifiers(node) && (ts.getModifiers(node) ?? []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword);
  for (const st of source.statements) {
    if (ts.isExportDeclaration(st)) {
      const target = st.moduleSpecifier && ts.isStringLiteral(st.moduleSpecifier) ? resolve(dirname(file), st.moduleSpecifier.text) : undefined;
      if (!st.exportClause) {
        if (!target) continue;
        const all = new Map<string, boolean>();
        exportsOf(target, all, seen);
        for (const [name, type] of all) add(name, st.isTypeOnly || type);
      } else if (ts.isNamespaceExport(st.exportClause)) {
        add(st.exportClause.name.text, st.isTypeOnly);
      } else if (ts.isNamedExports(st.exportClause)) {
        for (const e of st.exportClause.elements) add(e.name.text, st.isTypeOnly || e.isTypeOnly);
      }
    } else if (exported(st)) {
      if (ts.isVariableStatement(st)) {
        for (const d of st.declarationList.declarations) if (ts.isIdentifier(d.name)) add(d.name.text, false);
      } else if (ts.isInterfaceDeclaration(st) || ts.isTypeAliasDeclaration(st)) add(st.name.text, true);
      else if ((ts.isFunctionDeclaration(st) || ts.isClassDeclaration(st) || ts.isEnumDeclaration(st)) && st.name) add(st.name.text, false);
    }
  }
}

/** Every name the package's entry points export, by name: the first entry that has it (`first` before the rest). */
export function packageExports(repo: string, first?: string): Map<string, Exported> {
  const key = `${repo}\0${first ?? ""}`;
  const hit = cache.get(key);
  if (hit) return hit;
  const pkg = JSON.parse(readFileSync(join(repo, "package.json"), "utf8")) as { name: string; exports: Record<string, unknown> };
  const entries: Array<{ specifier: string; source: string }> = [];
  for (const [subpath, target] of Object.entries(pkg.exports)) {
    const source = typeof target === "object" && target !== null ? (target as Record<string, unknown>)["waymark-source"] : undefined;
    if (typeof source !== "string") continue;
    entries.push({ specifier: subpath === "." ? pkg.name : `${pkg.name}/${subpath.slice(2)}`, source: join(repo, source) });
  }
  entries.sort((a, b) => (a.specifier === first ? -1 : b.specifier === first ? 1 : 0));
  const names = new Map<string, Exported>();
  for (const entry of entries) {
    const found = new Map<string, boolean>();
    exportsOf(entry.source, found, new Set());
    for (const [name, type] of found) if (!names.has(name)) names.set(name, { from: entry.specifier, type });
  }
  cache.set(key, names);
  return names;
}

/** The identifiers a block uses and does not declare itself. */
export function freeNames(code: string): Set<string> {
  const source = ts.createSourceFile("sample.ts", code, ts.ScriptTarget.ES2022, true);
  const used = new Set<string>();
  const declared = new Set<string>();
  const declare = (name: ts.BindingName | undefined) => {
    if (!name) return;
    if (ts.isIdentifier(name)) declared.add(name.text);
    else for (const el of name.elements) if (!ts.isOmittedExpression(el)) declare(el.name);
  };
  const visit = (node: ts.Node) => {
    if (ts.isVariableDeclaration(node) || ts.isParameter(node) || ts.isBindingElement(node)) declare(node.name);
    if ((ts.isFunctionDeclaration(node) || ts.isClassDeclaration(node) || ts.isInterfaceDeclaration(node) || ts.isTypeAliasDeclaration(node) || ts.isEnumDeclaration(node)) && node.name) declared.add(node.name.text);
    if (ts.isImportClause(node) && node.name) declared.add(node.name.text);
    if (ts.isImportSpecifier(node) || ts.isNamespaceImport(node)) declared.add(node.name.text);
    if (ts.isTypeParameterDeclaration(node)) declared.add(node.name.text);
    if (ts.isIdentifier(node)) {
      const p = node.parent;
      const isName =
        (ts.isPropertyAccessExpression(p) && p.name === node) ||
        (ts.isQualifiedName(p) && p.right === node) ||
        ((ts.isPropertyAssignment(p) || ts.isPropertySignature(p) || ts.isPropertyDeclaration(p) || ts.isMethodDeclaration(p) || ts.isMethodSignature(p)) && p.name === node) ||
        (ts.isBindingElement(p) && p.propertyName === node) ||
        ts.isImportSpecifier(p) ||
        ts.isExportSpecifier(p) ||
        ts.isLabeledStatement(p) ||
        ts.isBreakOrContinueStatement(p);
      if (!isName) used.add(node.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  for (const name of declared) used.delete(name);
  return used;
}

function hasModuleSyntax(code: string): boolean {
  const source = ts.createSourceFile("sample.ts", code, ts.ScriptTarget.ES2022);
  return source.statements.some(
    (st) => ts.isImportDeclaration(st) || ts.isExportDeclaration(st) || ts.isExportAssignment(st) || (ts.canHaveModifiers(st) && (ts.getModifiers(st) ?? []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword)),
  );
}

/** The names a stand-ins module exports. */
function moduleNames(file: string): Map<string, boolean> {
  const found = new Map<string, boolean>();
  exportsOf(file, found, new Set());
  return found;
}

/** The specifier of a docs/api page's entry point (docs/api/local.md → waymark/local). */
function entryOfPage(page: string): string | undefined {
  const m = /^docs\/api\/(.+)\.md$/.exec(page);
  if (!m) return undefined;
  return m[1] === "waymark" ? "waymark" : `waymark/${m[1]}`;
}

export interface Prelude {
  text: string;
  lines: number;
  end: string;
}

/** What is written around a sample: nothing for a whole file; imports (and a workflow) for a body or an example. */
export function preludeOf(s: Sample, repo: string): Prelude {
  if (!s.body && s.example === undefined) return { text: "", lines: 0, end: "" };
  // A page's own stand-ins (stand-ins-cdk.ts for docs/api/cdk.md) before the shared ones.
  const support = join(repo, "test", "docs", "support");
  const pageStandIns = `stand-ins-${/^docs\/api\/(.+)\.md$/.exec(s.page)?.[1] ?? ""}.ts`;
  const sources = s.body ? ["services.ts"] : [...(existsSync(join(support, pageStandIns)) ? [pageStandIns] : []), "stand-ins.ts"];
  const local = new Map<string, { type: boolean; from: string }>();
  for (const file of sources) for (const [name, type] of moduleNames(join(support, file))) if (!local.has(name)) local.set(name, { type, from: `./${file}` });
  const fromPackage = packageExports(repo, entryOfPage(s.page));
  const imports = new Map<string, string[]>();
  const wanted = freeNames(s.code);
  if (s.body) wanted.delete("step");
  for (const name of [...wanted].sort()) {
    // The package's own value, else a stand-in (a value before the package's type of that name).
    const pkg = fromPackage.get(name);
    const standIn = local.get(name);
    const fromStandIns = standIn !== undefined && (pkg === undefined || (pkg.type && !standIn.type));
    const target = fromStandIns ? standIn.from : pkg?.from;
    if (!target) continue;
    const type = fromStandIns ? standIn.type : pkg?.type === true;
    imports.set(target, [...(imports.get(target) ?? []), type ? `type ${name}` : name]);
  }
  let text = [...imports].map(([from, names]) => `import { ${names.join(", ")} } from "${from}";`).join(" ");
  if (!s.body) {
    // An example that is statements (no import or export of its own) is the body of a function
    // whose `this` is a CDK stack, so `return` and `new X(this, …)` read as they would in place.
    if (hasModuleSyntax(s.code)) return { text: `${text} export {};\n`, lines: 1, end: "" };
    return { text: `${text} import type { Stack as ExampleStack } from "aws-cdk-lib"; export async function example(this: ExampleStack) {\n`, lines: 1, end: "}\n" };
  }
  text += ` import { durable as wrapInWorkflow } from "waymark"; import { SampleInput, SampleSignals } from "./services.ts";`;
  text += ` export const sample = wrapInWorkflow({ name: "sample", input: SampleInput, signals: SampleSignals }, async (_input, step) => {\n`;
  return { text, lines: 1, end: "});\n" };
}
