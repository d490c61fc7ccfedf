/** Sizes as UTF-8 JSON (lib/core/json.ts), counted without encoding: the same as the encoder's. */
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { jsonBytes, utf8Bytes } from "../../lib/core/json.ts";

const encoded = (s: string) => new TextEncoder().encode(s).byteLength;

describe("utf8Bytes", () => {
  it("counts ASCII, 2-, 3- and 4-byte characters, and lone surrogates as U+FFFD", () => {
    for (const s of ["", "abc", "héllo", "日本語", "😀x", "\ud800", "a\udc00b", "\ud83d", "x\ud800\ud800\udc00y"]) expect(utf8Bytes(s)).toBe(encoded(s));
  });

  it("agrees with TextEncoder on any string", () => {
    fc.assert(fc.property(fc.string({ unit: "binary" }), (s) => utf8Bytes(s) === encoded(s)), { numRuns: 2_000 });
  });

  it("measures a value's JSON", () => {
    expect(jsonBytes({ note: "日本" })).toBe(encoded(JSON.stringify({ note: "日本" })));
    expect(jsonBytes(undefined)).toBe(0);
  });
});
