/**
 * How the durable function is bundled: local esbuild (no Docker), ESM for Node 22, source maps,
 * the AWS SDK v3 left to the Lambda runtime. The function's `waymark` imports are bundled from
 * the same build of Waymark this construct runs from: the published `dist/` in a user's project,
 * the TypeScript sources (the `waymark-source` export condition) in Waymark's own repository.
 */
import { type BundlingOptions, OutputFormat } from "aws-cdk-lib/aws-lambda-nodejs";

/** True when this module runs from Waymark's TypeScript sources (its repository), not from dist/. */
const FROM_SOURCES = import.meta.url.endsWith(".ts");

/** ESM has no `require`; a CommonJS dependency that calls it gets one (aliased against clashes). */
export const ESM_REQUIRE_BANNER = "import { createRequire as __waymarkCreateRequire } from 'node:module'; const require = __waymarkCreateRequire(import.meta.url);";

/**
 * The default bundling options, with `overrides` on top.
 *
 * @example
 * ```ts
 * new NodejsFunction(this, "Fn", { entry, bundling: durableBundling({ minify: false }) });
 * ```
 */
export function durableBundling(overrides: BundlingOptions = {}): BundlingOptions {
  return {
    format: OutputFormat.ESM,
    target: "node22",
    mainFields: ["module", "main"],
    banner: ESM_REQUIRE_BANNER,
    minify: true,
    // Stack traces keep function names; Waymark's error classes carry literal names anyway.
    keepNames: true,
    sourceMap: true,
    externalModules: ["@aws-sdk/*"],
    ...(FROM_SOURCES ? { esbuildArgs: { "--conditions": "waymark-source" } } : {}),
    ...overrides,
  };
}
