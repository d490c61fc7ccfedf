/**
 * How the durable function is bundled: local esbuild (no Docker), ESM for Node 22, source maps,
 * the AWS SDK v3 left to the Lambda runtime, and the `waymark-source` condition so `waymark`
 * imports resolve to the package's TypeScript sources.
 */
import { type BundlingOptions, OutputFormat } from "aws-cdk-lib/aws-lambda-nodejs";

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
    esbuildArgs: { "--conditions": "waymark-source" },
    ...overrides,
  };
}
