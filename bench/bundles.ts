/**
 * The example functions' Lambda bundles, built with the construct's own bundling options
 * (`durableBundling()`: minified ESM, the AWS SDK external), with esbuild's metafile for where
 * the bytes come from.
 */
import { mkdirSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { gzipSync } from "node:zlib";
import { OutputFormat } from "aws-cdk-lib/aws-lambda-nodejs";
import { durableBundling } from "../infra/bundling.ts";

const root = resolve(import.meta.dirname, "..");

export interface FunctionBundle {
  name: string;
  file: string;
  bytes: number;
  gzipBytes: number;
  /** Bytes in the output by origin. */
  share: { waymark: number; example: number; zod: number; zodLocales: number; other: number };
}

/** The example functions the docs deploy or describe (docs/guides/performance.md), by entry and exported handler. */
export const EXAMPLES = [
  { name: "order-flow", entry: "functions/order-flow.ts", handler: "orderFlow" },
  { name: "charge-flow", entry: "functions/charge-flow.ts", handler: "chargeFlow" },
  { name: "refund-agent", entry: "functions/refund-agent.ts", handler: "refundAgent" },
] as const;

export async function bundleFunction(name: string, entry: string): Promise<FunctionBundle> {
  const { build } = await import("esbuild");
  const o = durableBundling();
  const dir = join(root, "node_modules/.cache/waymark-bench", name);
  mkdirSync(dir, { recursive: true });
  const file = join(dir, "index.mjs");
  const conditions = o.esbuildArgs?.["--conditions"];
  const { metafile } = await build({
    entryPoints: [join(root, entry)],
    outfile: file,
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
    ...(typeof conditions === "string" ? { conditions: conditions.split(",") } : {}),
    logLevel: "silent",
  });
  const code = readFileSync(file);
  const share = { waymark: 0, example: 0, zod: 0, zodLocales: 0, other: 0 };
  for (const [input, { bytesInOutput }] of Object.entries(Object.values(metafile.outputs)[0]?.inputs ?? {})) {
    if (input.startsWith("lib/")) share.waymark += bytesInOutput;
    else if (input.startsWith("functions/")) share.example += bytesInOutput;
    else if (input.startsWith("node_modules/zod/")) share.zod += bytesInOutput;
    else share.other += bytesInOutput;
    if (input.startsWith("node_modules/zod/v4/locales/")) share.zodLocales += bytesInOutput;
  }
  return { name, file, bytes: statSync(file).size, gzipBytes: gzipSync(code).length, share };
}
