import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { createApprovalLinks, verifyApprovalToken } from "../../lib/http/tokens.ts";
import { signRequest, verifyRequestSignature } from "../../lib/http/signing.ts";
import { OTHER_SECRET, SECRET } from "./helpers.ts";

const now = Date.UTC(2026, 0, 1);
const claims = { runId: "order-8472", waitId: "approval", signal: "approval", runCreatedAt: now - 60_000, issuedAt: now - 1000, expiresAt: Date.UTC(2026, 0, 2) };

describe("approval tokens", () => {
  it("are deterministic, verify, and carry their claims", () => {
    const links = createApprovalLinks({ secret: SECRET, baseUrl: "http://127.0.0.1:8787/" });
    const a = links.mint(claims);
    expect(links.mint({ ...claims })).toEqual(a);
    expect(a.url).toBe(`http://127.0.0.1:8787/approvals/${a.token}`);
    const v = verifyApprovalToken(SECRET, a.token, now);
    expect(v).toMatchObject({ ok: true, claims });
    if (v.ok) expect(v.signalId).toMatch(/^link:[0-9a-f]{40}$/);
  });

  it("differ for every claim, and a token for one wait never verifies as another", () => {
    const links = createApprovalLinks({ secret: SECRET });
    const tokens = new Set([
      links.mint(claims).token,
      links.mint({ ...claims, waitId: "approval#2" }).token,
      links.mint({ ...claims, runId: "order-8473" }).token,
      links.mint({ ...claims, expiresAt: claims.expiresAt + 1 }).token,
      links.mint({ runId: claims.runId, waitId: claims.waitId, signal: claims.signal, runCreatedAt: claims.runCreatedAt, issuedAt: claims.issuedAt }).token,
      links.mint({ ...claims, runCreatedAt: claims.runCreatedAt + 1 }).token,
      links.mint({ ...claims, approver: "ana" }).token,
      links.mint({ ...claims, approver: "ben" }).token,
    ]);
    expect(tokens.size).toBe(8);
    expect(links.mint(claims).url).toBeUndefined();
  });

  it("refuse a token signed with another secret, tampered claims, and non-canonical spellings", () => {
    const { token } = createApprovalLinks({ secret: OTHER_SECRET }).mint(claims);
    expect(verifyApprovalToken(SECRET, token, now)).toEqual({ ok: false, reason: "bad-signature" });

    const good = createApprovalLinks({ secret: SECRET }).mint(claims).token;
    const [payload, sig] = good.split(".") as [string, string];
    const forged = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload, "base64url").toString()), waitId: "approval#2" })).toString("base64url");
    expect(verifyApprovalToken(SECRET, `${forged}.${sig}`, now)).toEqual({ ok: false, reason: "bad-signature" });
    // The last base64url character of a 32-byte MAC carries 2 unused bits: flipping them must not give a second valid spelling.
    const last = sig.at(-1) as string;
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    const twin = alphabet[(alphabet.indexOf(last) ^ 1) % 64] as string;
    expect(verifyApprovalToken(SECRET, `${payload}.${sig.slice(0, -1)}${twin}`, now).ok).toBe(false);
    for (const bad of ["", ".", "abc", `${payload}.`, `.${sig}`, `${payload}.${sig}.x`, `${payload}=.${sig}`, "a".repeat(5000), `${payload} .${sig}`]) {
      expect(verifyApprovalToken(SECRET, bad, now)).toEqual({ ok: false, reason: "malformed" });
    }
  });

  it("expire at the wait's timeout, not a millisecond later", () => {
    const { token } = createApprovalLinks({ secret: SECRET }).mint(claims);
    expect(verifyApprovalToken(SECRET, token, claims.expiresAt - 1).ok).toBe(true);
    expect(verifyApprovalToken(SECRET, token, claims.expiresAt)).toEqual({ ok: false, reason: "expired" });
  });

  it("always expire: at the wait's timeout, or the maximum lifetime from when the wait began if sooner", () => {
    const week = createApprovalLinks({ secret: SECRET });
    const { runId, waitId, signal, runCreatedAt, issuedAt } = claims;
    const open = week.mint({ runId, waitId, signal, runCreatedAt, issuedAt });
    expect(open.expiresAt).toBe(issuedAt + 7 * 86_400_000);
    expect(verifyApprovalToken(SECRET, open.token, open.expiresAt - 1)).toMatchObject({ ok: true, claims: { expiresAt: open.expiresAt, runCreatedAt } });
    expect(verifyApprovalToken(SECRET, open.token, open.expiresAt)).toEqual({ ok: false, reason: "expired" });
    const hour = createApprovalLinks({ secret: SECRET, maxLifetime: "1h" });
    expect(hour.mint(claims).expiresAt).toBe(issuedAt + 3600_000);
    expect(week.mint(claims).expiresAt).toBe(claims.expiresAt);
  });

  it("carry their approver, and a first-format token is refused as legacy (it was bound to neither incarnation nor lifetime)", () => {
    const { token } = createApprovalLinks({ secret: SECRET }).mint({ ...claims, approver: "ana@shop.test" });
    expect(verifyApprovalToken(SECRET, token, now)).toMatchObject({ ok: true, claims: { approver: "ana@shop.test" } });
    // A genuine token of the first format, minted as the old code did.
    const key = createHmac("sha256", SECRET).update("waymark-approval-v1").digest();
    const payload = Buffer.from(JSON.stringify({ runId: "order-8472", waitId: "approval", signal: "approval" })).toString("base64url");
    const legacy = `${payload}.${createHmac("sha256", key).update(payload).digest("base64url")}`;
    expect(verifyApprovalToken(SECRET, legacy, now)).toEqual({ ok: false, reason: "legacy" });
  });

  it("are signed with a key derived for this purpose, and verify under either secret during a rotation", () => {
    const { token } = createApprovalLinks({ secret: SECRET }).mint(claims);
    const [payload, sig] = token.split(".") as [string, string];
    expect(sig).not.toBe(createHmac("sha256", SECRET).update(payload).digest("base64url"));
    expect(verifyApprovalToken([OTHER_SECRET, SECRET], token, now).ok).toBe(true);
    expect(() => createApprovalLinks({ secret: "short" })).toThrow(RangeError);
    expect(() => createApprovalLinks({ secret: [] })).toThrow(RangeError);
  });
});

describe("request signatures", () => {
  const req = { method: "POST", path: "/runs/o-1/signals/approval", body: '{"payload":{"approved":true,"approver":"ana"}}' };

  it("verify within the replay window, both ways, and not beyond", () => {
    const headers = signRequest(SECRET, req, now);
    expect(verifyRequestSignature(SECRET, req, headers, now)).toMatchObject({ ok: true });
    expect(verifyRequestSignature(SECRET, req, headers, now + 300_000)).toMatchObject({ ok: true });
    expect(verifyRequestSignature(SECRET, req, headers, now - 300_000)).toMatchObject({ ok: true });
    expect(verifyRequestSignature(SECRET, req, headers, now + 301_000)).toEqual({ ok: false, reason: "stale-timestamp" });
    expect(verifyRequestSignature(SECRET, req, headers, now - 301_000)).toEqual({ ok: false, reason: "stale-timestamp" });
  });

  it("cover method, path, body and timestamp", () => {
    const headers = signRequest(SECRET, req, now);
    expect(verifyRequestSignature(SECRET, { ...req, method: "PUT" }, headers, now)).toEqual({ ok: false, reason: "bad-signature" });
    expect(verifyRequestSignature(SECRET, { ...req, path: "/runs/o-2/signals/approval" }, headers, now)).toEqual({ ok: false, reason: "bad-signature" });
    expect(verifyRequestSignature(SECRET, { ...req, body: `${req.body} ` }, headers, now)).toEqual({ ok: false, reason: "bad-signature" });
    const ts = String(Number(headers["x-waymark-timestamp"]) + 1);
    expect(verifyRequestSignature(SECRET, req, { ...headers, "x-waymark-timestamp": ts }, now)).toEqual({ ok: false, reason: "bad-signature" });
    expect(verifyRequestSignature(OTHER_SECRET, req, headers, now)).toEqual({ ok: false, reason: "bad-signature" });
  });

  it("refuse missing and malformed headers", () => {
    const headers = signRequest(SECRET, req, now);
    expect(verifyRequestSignature(SECRET, req, {}, now)).toEqual({ ok: false, reason: "missing" });
    expect(verifyRequestSignature(SECRET, req, { "x-waymark-signature": headers["x-waymark-signature"] }, now)).toEqual({ ok: false, reason: "missing" });
    for (const sig of ["v1=", "v2=" + "0".repeat(64), "v1=" + "z".repeat(64), headers["x-waymark-signature"] + "00"]) {
      expect(verifyRequestSignature(SECRET, req, { ...headers, "x-waymark-signature": sig }, now)).toEqual({ ok: false, reason: "malformed" });
    }
    for (const ts of ["", "-1", "1e9", "12.5", "9".repeat(13)]) {
      expect(verifyRequestSignature(SECRET, req, { ...headers, "x-waymark-timestamp": ts }, now)).toEqual({ ok: false, reason: "malformed" });
    }
  });
});
