/**
 * Waymark's bytes in a function's bundle by capability: what every run needs (the engine, the run
 * protocol's hot path, step.run, sleeps, signals, the DynamoDB store's hot path, the SQS entry)
 * against what only some functions use. Each capability's modules are replaced by stubs (every
 * export a function that throws, a constant `undefined`, an empty class) and the bundle is built
 * again as the construct builds it (bundles.ts): "alone" is what leaving out that capability
 * saves, "then" the bundle with it and every capability above it left out. A stub keeps the
 * module's name in the graph, so a module reached only through stubbed ones drops out as it would
 * behind a build-time flag or a lazily loaded chunk. The stubbed bundles are measured, never run.
 *
 * Run: node --conditions=waymark-source --import tsx bench/bundle-capabilities.ts [entry] [webhook=on|off]
 */
import { readFileSync } from "node:fs";
import { relative, resolve } from "node:path";
import type { Plugin } from "esbuild";
import { bundleFunction } from "./bundles.ts";

/** Each capability a function may do without, by the modules only it needs. */
export const CAPABILITIES: ReadonlyArray<{ name: string; modules: readonly string[] }> = [
  { name: "step.transact", modules: ["lib/core/execution/transact-step.ts", "lib/core/run/transact.ts", "lib/aws/dynamodb-transact.ts", "lib/core/transact/validate.ts", "lib/core/transact/ops.ts"] },
  { name: "child runs (step.invoke/start, both sides)", modules: ["lib/core/run/children.ts", "lib/aws/remote-children.ts", "lib/aws/child-entry.ts", "lib/aws/child-message.ts", "lib/core/children.ts"] },
  { name: "step.map / step.parallel", modules: ["lib/core/execution/fan-out.ts"] },
  { name: "flow control (concurrency, rate, debounce)", modules: ["lib/core/run/flow.ts", "lib/aws/dynamodb-flow.ts", "lib/core/flow-control.ts", "lib/core/engine-slot.ts"] },
  { name: "continueAsNew", modules: ["lib/core/run/continue.ts"] },
  { name: "payloads by reference (S3)", modules: ["lib/core/payloads.ts", "lib/aws/s3-payloads.ts", "lib/core/execution/refs.ts"] },
  { name: "retention (stream, purge, a reused id's sweep)", modules: ["lib/aws/dynamodb-retention.ts", "lib/aws/retention-stream.ts"] },
  { name: "watchdog and run listing", modules: ["lib/aws/watchdog.ts", "lib/aws/dynamodb-lists.ts"] },
  { name: "webhook secret reader (SSM, Secrets Manager)", modules: ["lib/aws/webhook-secret.ts"] },
  { name: "client (start by invoke, the webhook's calls)", modules: ["lib/client.ts", "lib/client-values.ts", "lib/run-handle.ts", "lib/hosted.ts"] },
  { name: "cancellation by request", modules: ["lib/core/run/cancel.ts"] },
  { name: "observability (JSON logger, EMF metrics)", modules: ["lib/observe/metrics.ts", "lib/observe/logger.ts", "lib/observe/entries.ts", "lib/observe/sinks.ts"] },
];

const root = resolve(import.meta.dirname, "..");

/** A module's stand-in: its exported names, each a throwing function, `undefined` or an empty class. */
export function stubOf(source: string): string {
  const out: string[] = [];
  for (const m of source.matchAll(/^export (?:async )?function\*? (\w+)/gm)) out.push(`export function ${m[1]}() { throw new Error("stub"); }`);
  for (const m of source.matchAll(/^export (?:const|let) (\w+)/gm)) out.push(`export const ${m[1]} = undefined;`);
  for (const m of source.matchAll(/^export (?:abstract )?class (\w+)/gm)) out.push(`export class ${m[1]} {}`);
  for (const m of source.matchAll(/^export \{([^}]*)\} from "[^"]+"/gm)) {
    for (const name of (m[1] ?? "").split(",").map((n) => n.trim()).filter((n) => n !== "" && !n.startsWith("type "))) out.push(`export const ${name.split(" as ").pop()} = undefined;`);
  }
  return out.join("\n");
}

function stubs(modules: readonly string[]): Plugin {
  const set = new Set(modules);
  return {
    name: "capability-stubs",
    setup(b) {
      b.onLoad({ filter: /\.ts$/ }, (args) => {
        const rel = relative(root, args.path).split("\\").join("/");
        return set.has(rel) ? { contents: stubOf(readFileSync(args.path, "utf8")), loader: "ts" } : undefined;
      });
    },
  };
}

const [entry = "functions/order-flow.ts", webhookArg = "on"] = process.argv.slice(2);
const webhook = webhookArg !== "off";
const kib = (n: number) => (n / 1024).toFixed(1);
const base = await bundleFunction("capabilities", entry, { webhook });
console.log(`${entry} (webhook ${webhookArg}, tracing off): ${kib(base.bytes)} KiB, Waymark's own ${kib(base.share.waymark)} KiB\n`);
console.log(`${"capability left out".padEnd(48)} ${"alone".padStart(9)}   then: bundle, Waymark's own`);
const cumulative: string[] = [];
for (const c of CAPABILITIES) {
  const alone = await bundleFunction("capabilities", entry, { webhook, plugins: [stubs(c.modules)] });
  cumulative.push(...c.modules);
  const then = await bundleFunction("capabilities", entry, { webhook, plugins: [stubs(cumulative)] });
  console.log(`${c.name.padEnd(48)} ${`-${kib(base.share.waymark - alone.share.waymark)}`.padStart(5)} KiB   ${kib(then.bytes).padStart(6)} KiB, ${kib(then.share.waymark).padStart(6)} KiB`);
}
console.log("\nWhat is left is what every run of this function needs: the engine, the run protocol, the step kinds it");
console.log("uses, the store's hot path, the wake queues, the Lambda entry (bench/bundle-shares.ts lists it by file).");
