/**
 * Issue 19, item 4: code a function never runs is not in its bundle. The construct's real esbuild
 * bundles of the order workflow, three ways: the default (webhook on, tracing off), `webhook:
 * false`, and `tracing: true`. The webhook's routes and the approver's page are recognised by the
 * page's doctype, the tracing module by its span name. Sizes are reported in bench/, not here.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { checkTracingPackage, durableBundling, type DurableFunctionProps } from "waymark/cdk";
import { synthDurable } from "./stack.ts";

const repo = fileURLToPath(new URL("../../", import.meta.url));
mkdirSync(join(repo, ".waymark"), { recursive: true });
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function bundleOf(props: Partial<DurableFunctionProps>): { code: string } {
  const outdir = mkdtempSync(join(repo, ".waymark", "cdk-trim-test-"));
  dirs.push(outdir);
  const t = synthDurable(props, { bundle: true, outdir });
  const fn = Object.values(t.template.findResources("AWS::Lambda::Function"))[0] as {
    Properties: { Code: { S3Key: string } };
  };
  const code = readFileSync(join(outdir, `asset.${fn.Properties.Code.S3Key.replace(/\.zip$/, "")}`, "index.mjs"), "utf8");
  return { code };
}

const PAGE = /<!doctype html>/i;
const TRACING = "waymark.invocation";

describe("what a function's bundle carries", () => {
  it("by default: the webhook and its page, no tracing code", () => {
    const { code } = bundleOf({});
    expect(code).toMatch(PAGE);
    expect(code).not.toContain(TRACING);
  });

  it("by default, the handler's and the webhook's code imported statically: no module behind a lazy initialiser", () => {
    // esbuild wraps each module reached through a bundled import() in a closure that starts with
    // "use strict" (and keeps all its exports); the `waymark-lambda` condition avoids those imports.
    const { code } = bundleOf({});
    expect(code.split('"use strict"').length - 1).toBe(0);
  });

  it("with webhook: false, neither the webhook's routes nor the approver's page, and a smaller bundle", () => {
    const full = bundleOf({}).code;
    const { code } = bundleOf({ webhook: false });
    expect(code).not.toMatch(PAGE);
    expect(code.length).toBeLessThan(full.length);
  });

  it("with tracing: true, the tracing code", () => {
    const { code } = bundleOf({ tracing: true });
    expect(code).toContain(TRACING);
  });
});

describe("tracing: true without @opentelemetry/api", () => {
  // A folder with no node_modules above it: where a project without the package resolves from.
  const bare = mkdtempSync(join(tmpdir(), "waymark-no-otel-"));
  dirs.push(bare);
  writeFileSync(join(bare, "x.js"), "");
  const from = pathToFileURL(join(bare, "x.js")).href;

  it("is a clear error at synth, not a function that silently traces nothing", () => {
    expect(() => checkTracingPackage(durableBundling(), from)).toThrow(/tracing: true needs @opentelemetry\/api, which is not installed here \(npm install @opentelemetry\/api\)/);
  });

  it("is fine when the runtime provides it (externalModules) or it is installed", () => {
    expect(() => checkTracingPackage(durableBundling({ externalModules: ["@aws-sdk/*", "@opentelemetry/api"] }), from)).not.toThrow();
    expect(() => checkTracingPackage(durableBundling())).not.toThrow(); // this repository has it
  });
});

describe("durableBundling", () => {
  it("keeps its module conditions when other esbuild arguments are given, unless they set their own", () => {
    const conditions = durableBundling({ esbuildArgs: { "--log-limit": "0" } }).esbuildArgs;
    expect(conditions).toEqual({ "--log-limit": "0", "--conditions": expect.stringMatching(/^waymark-lambda(,waymark-source)?$/) });
    expect(durableBundling({ esbuildArgs: { "--conditions": "mine" } }).esbuildArgs).toEqual({ "--conditions": "mine" });
  });
});
