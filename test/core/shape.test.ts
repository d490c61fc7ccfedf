/** Waymark's own format checks (lib/core/shape.ts): the zod behaviours the journal relies on. */
import { describe, expect, it } from "vitest";
import * as z from "../../lib/core/shape.ts";

const Rec = z.object({ v: z.literal(1), id: z.string().min(1), n: z.number().int().positive(), note: z.string().optional(), tags: z.record(z.string(), z.number()).optional() });

describe("shape checks", () => {
  it("accepts, strips unknown keys (as zod's objects do) and keeps optional keys only when present", () => {
    expect(Rec.parse({ v: 1, id: "a", n: 2, extra: true })).toEqual({ v: 1, id: "a", n: 2 });
    expect(Rec.parse({ v: 1, id: "a", n: 2, tags: { x: 1 } })).toEqual({ v: 1, id: "a", n: 2, tags: { x: 1 } });
  });

  it("reports every issue with its path", () => {
    const r = Rec.safeParse({ v: 2, id: "", n: 1.5, tags: { x: "1" } });
    expect(r.success).toBe(false);
    expect(r.success ? [] : r.error.issues.map((i) => i.path.join("."))).toEqual(["v", "id", "n", "tags.x"]);
    expect(Rec.safeParse(null).success).toBe(false);
    expect(Rec.safeParse([]).success).toBe(false);
  });

  it("refuses NaN and infinities as numbers, and unknown keys when strict", () => {
    for (const n of [Number.NaN, Number.POSITIVE_INFINITY, "1"]) expect(z.number().safeParse(n).success).toBe(false);
    expect(z.number().nonnegative().safeParse(0).success).toBe(true);
    const strict = z.object({ a: z.unknown() }).strict();
    expect(strict.safeParse({ a: 1, b: 2 })).toMatchObject({ success: false, error: { issues: [{ path: [], message: 'unrecognized key: "b"' }] } });
    expect(() => strict.parse({ b: 1 })).toThrow(z.ShapeError);
  });

  it("picks a discriminated union's variant by its literal", () => {
    const U = z.discriminatedUnion("kind", [z.object({ kind: z.literal("a"), x: z.number() }), z.object({ kind: z.literal("b"), y: z.enum(["p", "q"]) })]);
    expect(U.parse({ kind: "b", y: "q" })).toEqual({ kind: "b", y: "q" });
    expect(U.safeParse({ kind: "b", y: "r" }).success).toBe(false);
    const none = U.safeParse({ kind: "c" });
    expect(none.success ? [] : none.error.issues.map((i) => i.path)).toEqual([["kind"]]);
  });
});
