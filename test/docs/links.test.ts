/**
 * The docs and the code cite only what exists: every relative link of README.md and docs/ (and
 * its `#anchor`, a heading of the page it names), and every `docs/….md` or `docs/….png` a
 * comment in lib/, infra/, functions/, bench/, test/ or create-waymark/ names. Pages made up
 * here show a dead link and a dead anchor are found.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const repo = fileURLToPath(new URL("../../", import.meta.url));

function files(dir: string, keep: (name: string) => boolean): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(join(repo, d)).sort()) {
      if (name === "node_modules" || name.startsWith(".")) continue;
      const path = d === "" ? name : `${d}/${name}`;
      if (statSync(join(repo, path)).isDirectory()) walk(path);
      else if (keep(name)) out.push(path);
    }
  };
  walk(dir);
  return out;
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to dashes, repeats numbered. */
export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fence = false;
  for (const line of markdown.split("\n")) {
    if (/^\s*```/.test(line)) fence = !fence;
    const heading = !fence && /^#{1,6}\s+(.*)$/.exec(line);
    if (!heading) continue;
    const base = (heading[1] ?? "")
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N} _-]/gu, "")
      .replace(/ /g, "-");
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** The dead links of one page: `page: target` for each. `read` gives another page's text. */
export function deadLinks(page: string, markdown: string, read: (path: string) => string | undefined): string[] {
  const dead: string[] = [];
  let fence = false;
  for (const line of markdown.split("\n")) {
    if (/^\s*```/.test(line)) fence = !fence;
    if (fence) continue;
    const text = line.replace(/`[^`]*`/g, "");
    for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = m[1] ?? "";
      if (/^[a-z]+:/.test(target)) continue;
      const [path = "", anchor] = target.split("#");
      const file = path === "" ? page : normalize(join(dirname(page), path)).split("\\").join("/");
      const body = read(file);
      if (body === undefined) dead.push(`${page}: ${target} (no ${file})`);
      else if (anchor && file.endsWith(".md") && !anchorsOf(body).has(anchor)) dead.push(`${page}: ${target} (no heading #${anchor} in ${file})`);
    }
  }
  return dead;
}

/**
 * Pages other branches are writing at the same time, linked from here already (none now:
 * docs/guides/transact.md is merged). Remove an entry once its page is merged.
 */
const PENDING = new Set<string>();

const readRepo = (path: string): string | undefined => {
  const full = join(repo, path);
  if (PENDING.has(path) && !existsSync(full)) return "";
  if (!existsSync(full)) return undefined;
  return statSync(full).isDirectory() ? "" : readFileSync(full, "utf8");
};

describe("links", () => {
  it("every relative link and anchor of README.md and docs/ exists", () => {
    const pages = ["README.md", ...files("docs", (n) => n.endsWith(".md"))];
    expect(pages.length).toBeGreaterThan(20);
    expect(pages.flatMap((p) => deadLinks(p, readFileSync(join(repo, p), "utf8"), readRepo))).toEqual([]);
  });

  it("every docs/ file the code cites exists", () => {
    const sources = ["lib", "infra", "functions", "bench", "test", "create-waymark"].flatMap((d) => files(d, (n) => /\.(ts|mts|mjs|md)$/.test(n)));
    const missing: string[] = [];
    for (const source of sources) {
      if (source === "test/docs/links.test.ts") continue; // its own made-up pages
      for (const m of readFileSync(join(repo, source), "utf8").matchAll(/\bdocs\/[\w./-]*\w\.(md|png)\b/g)) {
        if (!existsSync(join(repo, m[0]))) missing.push(`${source}: ${m[0]}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it("are checked: a missing page and a missing heading are reported", () => {
    const pages: Record<string, string> = { "docs/a.md": "# A\n\n## Set up\n", "docs/b.md": "[ok](a.md#set-up) [gone](c.md) [no such](a.md#install) `[in code](x.md)`\n" };
    expect(deadLinks("docs/b.md", pages["docs/b.md"] ?? "", (p) => pages[p])).toEqual([
      "docs/b.md: c.md (no docs/c.md)",
      "docs/b.md: a.md#install (no heading #install in docs/a.md)",
    ]);
  });
});
