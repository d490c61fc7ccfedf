/**
 * Checks for Waymark's own formats (journal records, wake messages, webhook bodies, link
 * claims), in plain code: import it as `import * as z from "./shape.ts"`, and the subset of
 * zod's API those formats use reads and infers as it does in zod (`z.object`, `z.string().min(1)`,
 * `.optional()`, `.strict()`, `safeParse`, `z.infer`). Objects strip unknown keys, as zod's do.
 *
 * Why not zod itself: it is the user's schema library (any Standard Schema library works, see
 * standard-schema.ts), and classic zod, imported by the engine, put about 460 KiB into every
 * Lambda bundle. These checks are a few KiB and load nothing.
 */

/** One problem found, at a path into the value. */
export interface Issue {
  path: PropertyKey[];
  message: string;
}

export type SafeParseResult<T> = { success: true; data: T } | { success: false; error: { issues: Issue[] } };

/** `parse` of a value that does not fit; `issues` as `safeParse` gives them. */
export class ShapeError extends Error {
  override readonly name = "ShapeError" as const;
  constructor(readonly issues: Issue[]) {
    super(issues.map((i) => `${i.path.map(String).join(".") || "(root)"}: ${i.message}`).join("; "));
  }
}

/**
 * Where a check is, and what it found so far. The path is one stack shared by the whole check
 * (pushed and popped around each key), copied only when an issue is recorded: a record that
 * passes allocates no paths (replay checks every record of a journal).
 */
interface Ctx {
  path: PropertyKey[];
  issues: Issue[];
}

type Check<T> = (value: unknown, ctx: Ctx) => T;

/** A checked type. The `_output` field exists for type inference only. */
export class Shape<T> {
  declare readonly _output: T;
  constructor(protected readonly run: Check<T>) {}

  safeParse(value: unknown): SafeParseResult<T> {
    const ctx: Ctx = { path: [], issues: [] };
    const data = this.run(value, ctx);
    return ctx.issues.length === 0 ? { success: true, data } : { success: false, error: { issues: ctx.issues } };
  }

  parse(value: unknown): T {
    const result = this.safeParse(value);
    if (!result.success) throw new ShapeError(result.error.issues);
    return result.data;
  }

  optional(): OptionalShape<T> {
    return new OptionalShape<T>((value, ctx) => (value === undefined ? undefined : this.run(value, ctx)));
  }

  /** @internal Runs the check at `ctx`'s path (for composite shapes). */
  check(value: unknown, ctx: Ctx): T {
    return this.run(value, ctx);
  }

  /** @internal Runs the check one key deeper. */
  checkAt(value: unknown, key: PropertyKey, ctx: Ctx): T {
    ctx.path.push(key);
    const out = this.run(value, ctx);
    ctx.path.pop();
    return out;
  }
}

/** A shape whose key may be absent from an object. */
export class OptionalShape<T> extends Shape<T | undefined> {
  readonly optionalKey = true;
}

/** A shape that takes exactly one value (a discriminated union picks its variant by it). */
export class LiteralShape<L> extends Shape<L> {
  constructor(readonly value: L) {
    super((v, ctx) => (v === value ? value : fail(ctx, `expected ${JSON.stringify(value)}`, value)));
  }
}

export type output<S extends Shape<unknown>> = S["_output"];
// No shape transforms its value: what goes in is what comes out.
export type { output as infer, output as input };

function fail<T>(ctx: Ctx, message: string, value: T, key?: PropertyKey): T {
  ctx.issues.push({ path: key === undefined ? [...ctx.path] : [...ctx.path, key], message });
  return value;
}

function describe(value: unknown): string {
  return value === null ? "null" : Array.isArray(value) ? "array" : typeof value;
}

export class StringShape extends Shape<string> {
  min(length: number): StringShape {
    return this.and((s) => s.length >= length, `at least ${length} characters`);
  }

  max(length: number): StringShape {
    return this.and((s) => s.length <= length, `at most ${length} characters`);
  }

  /** Matches `pattern`, else the issue says `message`. */
  regex(pattern: RegExp, message: string): StringShape {
    return this.and((s) => pattern.test(s), message, message);
  }

  private and(ok: (s: string) => boolean, message: string, issue?: string): StringShape {
    return new StringShape((value, ctx) => {
      const before = ctx.issues.length;
      const s = this.run(value, ctx);
      return ctx.issues.length > before || ok(s) ? s : fail(ctx, issue ?? `too ${message.startsWith("at least") ? "short" : "long"}: ${message}`, s);
    });
  }
}

export class NumberShape extends Shape<number> {
  int(): NumberShape {
    return this.and(Number.isSafeInteger, "expected an integer");
  }

  positive(): NumberShape {
    return this.and((n) => n > 0, "expected a number > 0");
  }

  nonnegative(): NumberShape {
    return this.and((n) => n >= 0, "expected a number >= 0");
  }

  private and(ok: (n: number) => boolean, message: string): NumberShape {
    return new NumberShape((value, ctx) => {
      const before = ctx.issues.length;
      const n = this.run(value, ctx);
      return ctx.issues.length > before || ok(n) ? n : fail(ctx, message, n);
    });
  }
}

export function string(): StringShape {
  return new StringShape((value, ctx) => (typeof value === "string" ? value : fail(ctx, `expected string, received ${describe(value)}`, "")));
}

/** A finite number (as zod's: NaN and ±Infinity are refused). */
export function number(): NumberShape {
  return new NumberShape((value, ctx) => (typeof value === "number" && Number.isFinite(value) ? value : fail(ctx, `expected number, received ${describe(value)}`, 0)));
}

export function boolean(): Shape<boolean> {
  return new Shape((value, ctx) => (typeof value === "boolean" ? value : fail(ctx, `expected boolean, received ${describe(value)}`, false)));
}

export function unknown(): Shape<unknown> {
  return new Shape((value) => value);
}

export function literal<const L extends string | number | boolean>(literal: L): LiteralShape<L> {
  return new LiteralShape(literal);
}

function enumOf<const E extends readonly [string, ...string[]]>(values: E): Shape<E[number]> {
  const allowed = new Set<string>(values);
  return new Shape((value, ctx) =>
    typeof value === "string" && allowed.has(value) ? (value as E[number]) : fail(ctx, `expected one of ${values.map((v) => JSON.stringify(v)).join("|")}`, values[0]),
  );
}
export { enumOf as enum };

/** Values of `S` by key, recording issues at `path.key`. */
export function record<V>(_keys: StringShape, values: Shape<V>): Shape<Record<string, V>> {
  return new Shape((value, ctx) => {
    if (!isPlainObject(value)) return fail(ctx, `expected object, received ${describe(value)}`, {});
    const out: Record<string, V> = {};
    for (const k in value) if (Object.hasOwn(value, k)) out[k] = values.checkAt(value[k], k, ctx);
    return out;
  });
}

export function array<V>(items: Shape<V>): Shape<V[]> {
  return new Shape((value, ctx) =>
    Array.isArray(value) ? value.map((v: unknown, i) => items.checkAt(v, i, ctx)) : fail(ctx, `expected array, received ${describe(value)}`, []),
  );
}

type Fields = Record<string, Shape<unknown>>;
type OptionalKeys<F extends Fields> = { [K in keyof F]: F[K] extends OptionalShape<unknown> ? K : never }[keyof F];
type ObjectOutput<F extends Fields> = {
  [K in Exclude<keyof F, OptionalKeys<F>>]: F[K]["_output"];
} & { [K in OptionalKeys<F>]?: F[K]["_output"] };
type Flat<T> = { [K in keyof T]: T[K] };

export class ObjectShape<F extends Fields> extends Shape<Flat<ObjectOutput<F>>> {
  constructor(
    readonly shape: F,
    private readonly strictKeys = false,
  ) {
    const fields = Object.entries(shape).map(([key, field]) => ({ key, field, optional: field instanceof OptionalShape }));
    super((value, ctx) => {
      if (!isPlainObject(value)) return fail(ctx, `expected object, received ${describe(value)}`, {} as Flat<ObjectOutput<F>>);
      const out: Record<string, unknown> = {};
      for (const { key, field, optional } of fields) {
        const present = Object.hasOwn(value, key);
        if (!present && optional) continue;
        const v = field.checkAt(value[key], key, ctx);
        if (present) out[key] = v;
      }
      if (strictKeys) {
        const extra = Object.keys(value).filter((k) => !Object.hasOwn(shape, k));
        if (extra.length > 0) fail(ctx, `unrecognized key${extra.length > 1 ? "s" : ""}: ${extra.map((k) => JSON.stringify(k)).join(", ")}`, undefined);
      }
      return out as Flat<ObjectOutput<F>>;
    });
  }

  /** Refuses keys the shape does not name (instead of stripping them). */
  strict(): ObjectShape<F> {
    return new ObjectShape(this.shape, true);
  }
}

export function object<F extends Fields>(shape: F): ObjectShape<F> {
  return new ObjectShape(shape);
}

/** One of `options`, chosen by the literal value of `key` (looked up, not tried in turn, where every variant's `key` is a literal). */
export function discriminatedUnion<K extends string, O extends readonly ObjectShape<Fields>[]>(key: K, options: O): Shape<O[number]["_output"]> {
  const byTag = new Map<unknown, O[number]>();
  for (const o of options) {
    const tag = o.shape[key];
    if (tag instanceof LiteralShape && !byTag.has(tag.value)) byTag.set(tag.value, o);
  }
  const pick = (tag: unknown) => byTag.get(tag) ?? options.find((o) => o.shape[key]?.safeParse(tag).success);
  return new Shape((value, ctx) => {
    const option = pick(isPlainObject(value) ? value[key] : undefined);
    if (!option) return fail(ctx, `no variant has ${key} ${JSON.stringify(isPlainObject(value) ? value[key] : undefined)}`, undefined as unknown as O[number]["_output"], key);
    return option.check(value, ctx);
  });
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
