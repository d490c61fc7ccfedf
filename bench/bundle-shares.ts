/**
 * Where a function's bytes come from: its bundle built as the construct builds it (bundles.ts:
 * the webhook on, tracing off by default), with esbuild's metafile; every input's bytes in the
 * output, Waymark's own by file.
 *
 * Run: node --conditions=waymark-source --import tsx bench/bundle-shares.ts [entry] [top=40] [webhook=on|off] [tracing=off|on]
 * (`KEEP_NAMES=1` builds with esbuild's keepNames, to see what keeping names costs.)
 */
import { bundleFunction, bundleInputs } from "./bundles.ts";

const [entry = "functions/order-flow.ts", topArg = "40", webhook = "on", tracing = "off"] = process.argv.slice(2);
const b = await bundleFunction("shares", entry, { webhook: webhook !== "off", tracing: tracing === "on", ...(process.env.KEEP_NAMES === "1" ? { keepNames: true } : {}) });
const inputs = Object.entries(bundleInputs(b.metafile)).map(([file, { bytesInOutput }]) => ({ file, bytes: bytesInOutput }));
const kib = (n: number) => (n / 1024).toFixed(1);
// Packages by their path from node_modules on (a worktree's node_modules may be a link elsewhere).
const group = (f: string) => {
  if (f.startsWith("lib/")) return f.split("/").slice(0, 2).join("/");
  const pkg = /(?:^|\/)(node_modules\/.*)$/.exec(f)?.[1];
  if (pkg) return pkg.split("/").slice(0, pkg.startsWith("node_modules/@") ? 3 : 2).join("/");
  return f.split("/")[0]!;
};
const groups = new Map<string, number>();
for (const i of inputs) groups.set(group(i.file), (groups.get(group(i.file)) ?? 0) + i.bytes);
console.log(`${entry} (webhook ${webhook}, tracing ${tracing}): ${kib(b.bytes)} KiB, gzip ${kib(b.gzipBytes)} KiB, source map ${kib(b.mapBytes)} KiB; Waymark's own ${kib(b.share.waymark)} KiB`);
console.log("\nby folder / package:");
for (const [g, n] of [...groups].sort((x, y) => y[1] - x[1])) console.log(`${kib(n).padStart(7)} KiB  ${g}`);
console.log("\nlargest files:");
for (const i of inputs.sort((x, y) => y.bytes - x.bytes).slice(0, Number(topArg))) console.log(`${kib(i.bytes).padStart(7)} KiB  ${i.file}`);
