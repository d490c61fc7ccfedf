/**
 * The example functions' Lambda bundles, built as the construct builds them: its bundling options
 * (`durableBundling()`: minified ESM, the AWS SDK external) and its `define`s for what the
 * function runs (`trimDefines()`: the webhook on unless `webhook: false`, tracing off unless
 * `tracing: true`), with esbuild's metafile for where the bytes come from. The one definition of
 * those esbuild options for every bench (bundle-shares.ts, cold-start.ts).
 */
import { mkdirSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { gzipSync } from "node:zlib";
import type { BuildOptions, Metafile } from "esbuild";
import { type BundlingOptions, OutputFormat } from "aws-cdk-lib/aws-lambda-nodejs";
import { durableBundling, type TrimOptions, trimDefines } from "../infra/bundling.ts";

const root = resolve(import.meta.dirname, "..");

/** What the function serves: the construct's defaults (webhook on, tracing off) unless said. */
export type BundleVariant = Partial<TrimOptions> & { keepNames?: boolean };

export interface FunctionBundle {
  name: string;
  file: string;
  bytes: number;
  gzipBytes: number;
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
    ...(o.define ? { define: o.define } : {}),
    ...(typeof conditions === "string" ? { conditions: conditions.split(",") } : {}),
    logLevel: "silent",
  };
}

export async function bundleFunction(name: string, entry: string, variant: BundleVariant = {}): Promise<FunctionBundle> {
  const { build } = await import("esbuild");
  const dir = join(root, "node_modules/.cache/waymark-bench", name);
  mkdirSync(dir, { recursive: true });
  const file = join(dir, "index.mjs");
  const { metafile } = await build(esbuildOptions(entry, file, variant));
  if (!metafile) throw new Error("esbuild returned no metafile");
  const code = readFileSync(file);
  const share = { waymark: 0, example: 0, zod: 0, zodLocales: 0, other: 0 };
  for (const [input, { bytesInOutput }] of Object.entries(Object.values(metafile.outputs)[0]?.inputs ?? {})) {
    if (input.startsWith("lib/")) share.waymark += bytesInOutput;
    else if (input.startsWith("functions/")) share.example += bytesInOutput;
    else if (input.startsWith("node_modules/zod/")) share.zod += bytesInOutput;
    else share.other += bytesInOutput;
    if (input.startsWith("node_modules/zod/v4/locales/")) share.zodLocales += bytesInOutput;
  }
  return { name, file, bytes: statSync(file).size, gzipBytes: gzipSync(code).length, share, metafile };
}
