/**
 * Issue 19, item 4: code a function never runs is not in its bundle. The construct's real esbuild
 * bundles of the order workflow, three ways: the default (webhook on, tracing off), `webhook:
 * false`, and `tracing: true`. The webhook's routes and the approver's page are recognised by the
 * page's doctype, the tracing module by its span name. Sizes are reported in bench/, not here.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import type { DurableFunctionProps } from "waymark/cdk";
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
