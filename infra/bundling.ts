/**
 * How the durable function is bundled: local esbuild (no Docker), ESM for Node 22, source maps,
 * the AWS SDK v3 left to the Lambda runtime. The function's `waymark` imports are bundled from
 * the same build of Waymark this construct runs from: the published `dist/` in a user's project,
 * the TypeScript sources (the `waymark-source` export condition) in Waymark's own repository.
 */
import { createRequire } from "node:module";
import { type BundlingOptions, OutputFormat } from "aws-cdk-lib/aws-lambda-nodejs";

/** True when this module runs from Waymark's TypeScript sources (its repository), not from dist/. */
const FROM_SOURCES = import.meta.url.endsWith(".ts");

/**
 * The function's `NODE_OPTIONS`: stack traces mapped through the bundle's source map to the
 * sources' files, lines and names. Node reads and decodes the whole map when it loads the bundle,
 * on every cold start (see `sourcesContent` below).
 */
export const SOURCE_MAP_NODE_OPTIONS = "--enable-source-maps";

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
    // Off (esbuild's and NodejsFunction's default): nothing in Waymark reads a class's or a
    // function's name and its errors carry literal names; source maps (below) map stack traces
    // back to the sources. Keeping names costs ~11 KiB. Turn it on if your own code reads
    // `constructor.name` (e.g. `this.name = new.target.name` in an error class).
    keepNames: false,
    sourceMap: true,
    // The map without the sources' text: Node parses the map at every cold start (the function
    // runs with --enable-source-maps), and the text was 0.86 MiB of the order flow's 1.18 MiB map,
    // ~4 ms of its cold import on Node 24 (docs/guides/performance.md), while mapping nothing:
    // stack frames map to the same files, lines and names without it. Only the code excerpt Node
    // prints above an uncaught exception shows the bundle's line instead of the source's.
    sourcesContent: false,
    externalModules: ["@aws-sdk/*"],
    ...overrides,
    // `waymark-lambda`: Waymark's Lambda entry imports the handler's code statically (package.json
    // "#lambda-load", "#webhook-load"), not through a lazy import() that costs bundle bytes.
    // Merged, not replaced: other esbuild arguments keep these conditions unless they set their own.
    esbuildArgs: { "--conditions": FROM_SOURCES ? "waymark-lambda,waymark-source" : "waymark-lambda", ...overrides.esbuildArgs },
  };
}

/** What a function's bundle leaves out: the `define`s that make code it never runs dead code. */
export interface TrimOptions {
  /** The function serves the webhook (its Function URL): its routes and the approver's page. */
  webhook: boolean;
  /** Tracing is on: the tracing module and `@opentelemetry/api`. */
  tracing: boolean;
}

/**
 * esbuild `define`s that leave out of a bundle the code its function never runs (see
 * lib/aws/lambda.ts and lib/aws/runtime.ts): the webhook's code unless `webhook`, the tracing
 * code unless `tracing`.
 *
 * @example
 * ```ts
 * durableBundling({ define: trimDefines({ webhook: false, tracing: false }) });
 * ```
 */
export function trimDefines(o: TrimOptions): Record<string, string> {
  return {
    ...(o.webhook ? {} : { "process.env.WAYMARK_WEBHOOK": JSON.stringify("off") }),
    ...(o.tracing ? {} : { "process.env.WAYMARK_TRACING": JSON.stringify("off") }),
  };
}

/** The package tracing needs (an optional peer dependency of Waymark). */
export const TRACING_PACKAGE = "@opentelemetry/api";

/**
 * Throws unless a `tracing: true` function can trace: `@opentelemetry/api` resolves from
 * Waymark's own folder (where the bundler looks for it: lib/observe/tracing.ts imports it), or
 * the bundling leaves it to the runtime (`externalModules`, e.g. from a layer). Without it the
 * bundler would leave the import unresolved and the function would trace nothing, silently.
 *
 * @example
 * ```ts
 * checkTracingPackage(durableBundling()); // throws when @opentelemetry/api is not installed
 * ```
 */
export function checkTracingPackage(bundling: BundlingOptions, from: string = import.meta.url): void {
  if (bundling.externalModules?.some((m) => m === TRACING_PACKAGE || m === "@opentelemetry/*")) return;
  try {
    createRequire(from).resolve(TRACING_PACKAGE);
  } catch {
    throw new Error(`DurableFunction: tracing: true needs ${TRACING_PACKAGE}, which is not installed here (npm install ${TRACING_PACKAGE}); if the Lambda runtime provides it (a layer), add it to bundling.externalModules`);
  }
}
