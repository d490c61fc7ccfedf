/**
 * Issue 20 item 8: `waymark/ai` names its missing peer. The check resolves the package from
 * waymark/ai's own place, as Node would load it; here a package that is not installed stands in
 * for `ai` (test/package/consumer.ts imports waymark/ai with `ai` really uninstalled).
 */
import { describe, expect, it } from "vitest";
import { MissingDependencyError } from "waymark";
import { MissingDependencyError as LocalMissingDependencyError } from "waymark/local";
import { AI_SDK, requirePeer } from "../../lib/ai/peers.ts";

describe("waymark/ai's peer check", () => {
  it("passes when the package resolves (ai is installed here)", () => {
    expect(() => requirePeer(AI_SDK, "waymark/ai")).not.toThrow();
  });

  it("names a package that is not installed, and how to install it", () => {
    let caught: unknown;
    try {
      requirePeer("waymark-test-no-such-package", "waymark/ai (durable AI SDK agents)");
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(MissingDependencyError);
    expect(caught).toBeInstanceOf(LocalMissingDependencyError);
    expect(caught).toMatchObject({ name: "MissingDependencyError", retryable: false, packageName: "waymark-test-no-such-package" });
    expect((caught as Error).message).toBe('waymark/ai (durable AI SDK agents) needs the package "waymark-test-no-such-package", which is not installed. Install it: npm install waymark-test-no-such-package');
  });

  it("does not hide another failure to resolve", () => {
    const broken = Object.assign(new Error("Invalid package config"), { code: "ERR_INVALID_PACKAGE_CONFIG" });
    expect(() => requirePeer("ai", "waymark/ai", () => {
      throw broken;
    })).toThrow(broken);
  });
});
