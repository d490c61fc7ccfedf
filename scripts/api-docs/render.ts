/**
 * The API reference's markdown: one page per entry point, and an index. A TSDoc `@example` is
 * fenced `ts example=<Export>`: test/docs/samples.test.ts compiles it, with imports of the names
 * it uses (test/docs/samples-prelude.ts). The declarations are `ts fragment: <reason>`, as that
 * test asks of every other ```ts block that is not compiled.
 */
import type { Member, Tag } from "./symbols.ts";

export interface DocumentedSymbol {
  name: string;
  kind: string;
  source: string;
  declaration: string;
  summary: string;
  tags: Tag[];
  members: Member[];
}

export interface EntryDoc {
  entry: string;
  page: string;
  overview: string;
  symbols: DocumentedSymbol[];
}

const GENERATED = "<!-- Generated from the TSDoc by `npm run docs:api` (scripts/api-docs/). Do not edit: change the TSDoc and regenerate. -->";
const DECLARATION_FENCE = "```ts fragment: the declaration, generated from the source";
const exampleFence = (name: string) => `\`\`\`ts example=${name}`;

/** A GitHub heading anchor. */
export function anchor(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^a-z0-9 _-]/g, "")
    .replace(/ /g, "-");
}

/** The first sentence of a summary, on one line, for a table. */
export function firstSentence(text: string): string {
  const paragraph = (text.split(/\n\s*\n/)[0] ?? "").replace(/\s+/g, " ").trim();
  const end = paragraph.search(/\.(\s|$)/);
  const sentence = end >= 0 ? paragraph.slice(0, end + 1) : paragraph;
  return sentence.replace(/\|/g, "\\|");
}

/** An `@example`'s text: its ```ts fences marked as the example of `name`; a bare example put in one. */
function example(text: string, name: string): string {
  if (!text.includes("```")) return `${exampleFence(name)}\n${text.trim()}\n\`\`\``;
  return text.replace(/^```(ts|typescript)[^\n]*$/gm, exampleFence(name)).trim();
}

function paramLine(text: string): string {
  const match = /^(\S+)\s*(?:-\s*)?([\s\S]*)$/.exec(text);
  if (!match) return `- ${text}`;
  const [, name, rest] = match;
  return `- \`${name}\`${rest ? `: ${rest.replace(/\s*\n\s*/g, " ")}` : ""}`;
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, " ").replace(/\|/g, "\\|");
}

function renderSymbol(symbol: DocumentedSymbol, depth: string): string {
  const out: string[] = [`## \`${symbol.name}\``, "", `*${symbol.kind}*, from [\`${symbol.source}\`](${depth}${symbol.source})`, ""];
  if (symbol.declaration) out.push(DECLARATION_FENCE, symbol.declaration, "```", "");
  if (symbol.summary) out.push(symbol.summary, "");
  const byName = (name: string) => symbol.tags.filter((t) => t.name === name);
  const params = [...byName("param"), ...byName("typeParam")];
  if (params.length > 0) out.push("**Parameters**", "", ...params.map((t) => paramLine(t.text)), "");
  for (const tag of byName("returns")) out.push(`**Returns** ${tag.text}`, "");
  for (const tag of byName("throws")) out.push(`**Throws** ${tag.text}`, "");
  for (const tag of symbol.tags) {
    if (["param", "typeParam", "returns", "throws", "example", "internal"].includes(tag.name)) continue;
    out.push(`**@${tag.name}** ${tag.text}`.trim(), "");
  }
  if (symbol.members.length > 0) {
    out.push("| member | | default |", "| --- | --- | --- |");
    for (const m of symbol.members) out.push(`| \`${m.name}\` | ${oneLine(m.summary)} | ${m.defaultValue === undefined ? "" : oneLine(m.defaultValue)} |`);
    out.push("");
  }
  for (const tag of byName("example")) out.push("**Example**", "", example(tag.text, symbol.name), "");
  return out.join("\n");
}

/** The module's own comment: its text, and its example when it has one. */
function overview(text: string, entry: string): string[] {
  if (!text) return [];
  const [summary = "", ...examples] = text.split(/^@example\s*$/m);
  const out = [summary.trim(), ""];
  for (const e of examples) out.push("**Example**", "", example(e, entry), "");
  return out;
}

export function renderEntryPage(doc: EntryDoc): string {
  const depth = "../../";
  const out: string[] = [GENERATED, "", `# \`${doc.entry}\``, "", ...overview(doc.overview, doc.entry)];
  out.push(`[All entry points](README.md)`, "", "| export | kind | |", "| --- | --- | --- |");
  for (const s of doc.symbols) out.push(`| [\`${s.name}\`](#${anchor(`\`${s.name}\``)}) | ${s.kind} | ${firstSentence(s.summary)} |`);
  out.push("");
  for (const s of doc.symbols) out.push(renderSymbol(s, depth));
  return `${out.join("\n").replace(/\n{3,}/g, "\n\n").trimEnd()}\n`;
}

export function renderIndexPage(docs: readonly EntryDoc[]): string {
  const out: string[] = [
    GENERATED,
    "",
    "# API reference",
    "",
    "Every export of the package's entry points (package.json `exports`), from the TSDoc in the source.",
    "[The guides](../README.md) explain what to use when; these pages say exactly what each export is.",
    "",
    "| import | exports | |",
    "| --- | --- | --- |",
  ];
  for (const doc of docs) out.push(`| [\`${doc.entry}\`](${doc.page}) | ${doc.symbols.length} | ${firstSentence(doc.overview.split(/^@example/m)[0] ?? "")} |`);
  return `${out.join("\n")}\n`;
}
