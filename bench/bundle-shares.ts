/**
 * Where the order-flow Lambda's bytes come from: its bundle built as the construct builds it by
 * default (durableBundling(), the webhook on, tracing off: WAYMARK_TRACING defined "off"), with
 * esbuild's metafile; every input's bytes in the output, Waymark's own by file.
 *
 * Run: node --conditions=waymark-source --import tsx bench/bundle-shares.ts [entry] [top=40] [webhook=on|off]
 * (`KEEP_NAMES=0` builds without esbuild's keepNames, to see what keeping names costs.)
 */
import { join, resolve } from "node:path";
import { statSync } from "node:fs";
import { OutputFormat } from "aws-cdk-lib/aws-lambda-nodejs";
import { durableBundling } from "../infra/bundling.ts";

const root = resolve(import.meta.dirname, "..");
const [entry = "functions/order-flow.ts", topArg = "40", webhook = "on"] = process.argv.slice(2);
const { build } = await import("esbuild");
const o = durableBundling();
const outfile = join(root, "node_modules/.cache/waymark-bench/shares/index.mjs");
const conditions = o.esbuildArgs?.["--conditions"];
const { metafile } = await build({
  entryPoints: [join(root, entry)],
  outfile,
  metafile: true,
  bundle: true,
  platform: "node",
  format: o.format === OutputFormat.CJS ? "cjs" : "esm",
  ...(o.target ? { target: o.target } : {}),
  ...(o.mainFields ? { mainFields: o.mainFields } : {}),
  ...(o.banner ? { banner: { js: o.banner } } : {}),
  minify: o.minify ?? false,
  keepNames: process.env.KEEP_NAMES === "0" ? false : (o.keepNames ?? false),
  external: o.externalModules ?? [],
  define: { "process.env.WAYMARK_TRACING": JSON.stringify("off"), ...(webhook === "off" ? { "process.env.WAYMARK_WEBHOOK": JSON.stringify("off") } : {}) },
  ...(typeof conditions === "string" ? { conditions: conditions.split(",") } : {}),
  logLevel: "silent",
});
const inputs = Object.entries(Object.values(metafile.outputs)[0]?.inputs ?? {}).map(([file, { bytesInOutput }]) => ({ file, bytes: bytesInOutput }));
const kib = (b: number) => (b / 1024).toFixed(1);
const group = (f: string) => (f.startsWith("lib/") ? f.split("/").slice(0, 2).join("/") : f.startsWith("node_modules/") ? f.split("/").slice(0, f.startsWith("node_modules/@") ? 3 : 2).join("/") : f.split("/")[0]!);
const groups = new Map<string, number>();
for (const i of inputs) groups.set(group(i.file), (groups.get(group(i.file)) ?? 0) + i.bytes);
console.log(`${entry}: ${kib(statSync(outfile).size)} KiB; Waymark's own ${kib(inputs.filter((i) => i.file.startsWith("lib/")).reduce((a, i) => a + i.bytes, 0))} KiB`);
console.log("\nby folder / package:");
for (const [g, b] of [...groups].sort((a, b) => b[1] - a[1])) console.log(`${kib(b).padStart(7)} KiB  ${g}`);
console.log("\nlargest files:");
for (const i of inputs.sort((a, b) => b.bytes - a.bytes).slice(0, Number(topArg))) console.log(`${kib(i.bytes).padStart(7)} KiB  ${i.file}`);
