/**
 * The example functions' Lambda bundles, built as the construct builds them: its bundling options
 * (`durableBundling()`: minified ESM, the AWS SDK external, a source map without the sources'
 * text) and its `define`s for what the function runs (`trimDefines()`: the webhook on unless
 * `webhook: false`, tracing off unless `tracing: true`), with esbuild's metafile for where the
 * bytes come from. The one definition of those esbuild options for every bench
 * (bundle-shares.ts, bundle-capabilities.ts, cold-start.ts).
 */
import { mkdirSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { gzipSync } from "node:zlib";
import type { BuildOptions, Metafile, Plugin } from "esbuild";
import { type BundlingOptions, OutputFormat } from "aws-cdk-lib/aws-lambda-nodejs";
import { durableBundling, type TrimOptions, trimDefines } from "../infra/bundling.ts";

const root = resolve(import.meta.dirname, "..");

/**
 * What the function serves: the construct's defaults (webhook on, tracing off) unless said.
 * `withoutWaymark`: the function's own code and its packages with `waymark` replaced by a stub
 * (`durable()` returns the workflow function), the baseline Waymark's share of a cold start is
 * measured against. `plugins`: esbuild plugins of a bench's own (bundle-capabilities.ts).
 */
export type BundleVariant = Partial<TrimOptions> & { keepNames?: boolean; withoutWaymark?: boolean; plugins?: Plugin[] };

export interface FunctionBundle {
  name: string;
  file: string;
  bytes: number;
  gzipBytes: number;
  /** The source map's size (the construct's: no `sourcesContent`); Node parses it at every cold start. */
  mapBytes: number;
  /** Bytes in the output by origin. */
  share: { waymark: number; example: number; zod: number; zodLocales: number; other: number };
  metafile: Metafile;
}

/** The example functions the docs deploy or describe (docs/guides/performance.md), by entry and exported handler. */
export const EXAMPLES = [
  { name: "order-flow", entry: "functions/order-flow.ts", handler: "orderFlow" },
  { name: "charge-flow", entry: "functions/charge-flow.ts", handler: "chargeFlow" },
  { name: "refund-agent", entry: "functions/refund-agent.ts", handler: "refundAgent" },
] as const;

/** esbuild's options for what NodejsFunction runs with the construct's bundling options. */
export function esbuildOptions(entry: string, outfile: string, variant: BundleVariant = {}): BuildOptions {
  const define = trimDefines({ webhook: variant.webhook ?? true, tracing: variant.tracing ?? false });
  const o: BundlingOptions = durableBundling({ define, ...(variant.keepNames === undefined ? {} : { keepNames: variant.keepNames }) });
  const conditions = o.esbuildArgs?.["--conditions"];
  return {
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
    keepNames: o.keepNames ?? false,
    external: o.externalModules ?? [],
    ...(o.sourceMap ? { sourcemap: true, sourcesContent: o.sourcesContent ?? true } : {}),
    ...(o.define ? { define: o.define } : {}),
    ...(typeof conditions === "string" ? { conditions: conditions.split(",") } : {}),
    logLevel: "silent",
  };
}

/** `waymark` as a stub: `durable()` hands back the workflow function, its errors are plain classes. */
const WAYMARK_STUB: Plugin = {
  name: "waymark-stub",
  setup(b) {
    b.onLoad({ filter: /[/\\]lib[/\\]index\.ts$/ }, () => ({
      loader: "ts",
      contents: "export class CancelledError extends Error {}\nexport class StepFailedError extends Error {}\nexport function durable(options: unknown, fn: unknown) { return fn; }\n",
    }));
  },
};

/** The bundle's inputs (source file → bytes in the output), without the source map's entry. */
export function bundleInputs(metafile: Metafile): Record<string, { bytesInOutput: number }> {
  const [, output] = Object.entries(metafile.outputs).find(([file]) => !file.endsWith(".map")) ?? [];
  return output?.inputs ?? {};
}

export async function bundleFunction(name: string, entry: string, variant: BundleVariant = {}): Promise<FunctionBundle> {
  const { build } = await import("esbuild");
  const dir = join(root, "node_modules/.cache/waymark-bench", name);
  mkdirSync(dir, { recursive: true });
  const file = join(dir, "index.mjs");
  const plugins = [...(variant.withoutWaymark ? [WAYMARK_STUB] : []), ...(variant.plugins ?? [])];
  const { metafile } = await build({ ...esbuildOptions(entry, file, variant), ...(plugins.length ? { plugins } : {}) });
  if (!metafile) throw new Error("esbuild returned no metafile");
  const code = readFileSync(file);
  const share = { waymark: 0, example: 0, zod: 0, zodLocales: 0, other: 0 };
  // Packages by their path from node_modules on (a worktree's node_modules may be a link elsewhere).
  const pkg = (input: string) => /(?:^|\/)node_modules\/(.*)$/.exec(input)?.[1];
  for (const [input, { bytesInOutput }] of Object.entries(bundleInputs(metafile))) {
    if (input.startsWith("lib/")) share.waymark += bytesInOutput;
    else if (input.startsWith("functions/")) share.example += bytesInOutput;
    else if (pkg(input)?.startsWith("zod/")) share.zod += bytesInOutput;
    else share.other += bytesInOutput;
    if (pkg(input)?.startsWith("zod/v4/locales/")) share.zodLocales += bytesInOutput;
  }
  const mapBytes = statSync(`${file}.map`, { throwIfNoEntry: false })?.size ?? 0;
  return { name, file, bytes: statSync(file).size, gzipBytes: gzipSync(code).length, mapBytes, share, metafile };
}
