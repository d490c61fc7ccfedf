/**
 * `npm run docs:api`: writes docs/api/ from the TSDoc of the public entry points (see
 * scripts/api-docs/generate.ts). Lists the exported symbols that have no TSDoc, and exits 1 if
 * there are any (the pages are written all the same). `--check` writes nothing and exits 1 when
 * docs/api/ differs from what it would write.
 */
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { generateApiDocs, REPO, stalePages } from "./api-docs/generate.ts";

const dir = join(REPO, "docs", "api");
const check = process.argv.includes("--check");
const { pages, undocumented } = generateApiDocs();
const stale = stalePages(pages);

if (check) {
  if (stale.length > 0) console.error(`docs/api is stale (run npm run docs:api): ${stale.join(", ")}`);
} else {
  mkdirSync(dir, { recursive: true });
  for (const name of existsSync(dir) ? readdirSync(dir) : []) if (name.endsWith(".md") && !pages.has(name)) rmSync(join(dir, name));
  for (const [name, text] of pages) writeFileSync(join(dir, name), text);
  console.log(`docs/api: ${pages.size} pages, ${stale.length > 0 ? `changed: ${stale.join(", ")}` : "unchanged"}`);
}
if (undocumented.length > 0) {
  console.error(`${undocumented.length} exported symbols have no TSDoc:\n  ${undocumented.join("\n  ")}`);
}
process.exitCode = undocumented.length > 0 || (check && stale.length > 0) ? 1 : 0;
