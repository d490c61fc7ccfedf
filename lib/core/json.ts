import { SerializationError } from "./errors.ts";

/**
 * Checks that a value survives a JSON round trip unchanged, so what a step returns live is
 * exactly what replay returns from the journal. Throws {@link SerializationError} naming the
 * offending path: functions, symbols, `BigInt`, non-finite numbers, class instances (a `Date`,
 * a `Map`), `undefined` inside arrays, and cycles. `undefined` object properties are dropped,
 * as JSON drops them.
 */
export function assertJsonSafe(value: unknown, path = "result"): void {
  // A plain value (most step results) needs no set of the objects seen.
  if (typeof value !== "object" || value === null) visit(value, path, NO_OBJECTS);
  else visit(value, path, new Set());
}

/** The `seen` of a check that meets no object (never written to). */
const NO_OBJECTS: Set<object> = new Set();

function visit(value: unknown, path: string, seen: Set<object>): void {
  switch (typeof value) {
    case "string":
    case "boolean":
    case "undefined":
      return;
    case "number":
      if (!Number.isFinite(value)) throw new SerializationError(path, `${value} is not a JSON number`);
      return;
    case "bigint":
      throw new SerializationError(path, "a BigInt has no JSON form (return it as a string)");
    case "function":
      throw new SerializationError(path, "a function has no JSON form");
    case "symbol":
      throw new SerializationError(path, "a symbol has no JSON form");
  }
  if (value === null) return;
  const obj = value as object;
  if (seen.has(obj)) throw new SerializationError(path, "the value contains a cycle");
  seen.add(obj);
  if (Array.isArray(obj)) {
    obj.forEach((item, i) => {
      if (item === undefined) throw new SerializationError(`${path}[${i}]`, "undefined in an array becomes null in JSON");
      visit(item, `${path}[${i}]`, seen);
    });
  } else {
    const proto = Object.getPrototypeOf(obj);
    if (proto !== Object.prototype && proto !== null) {
      const kind = (proto as { constructor?: { name?: string } }).constructor?.name ?? "object";
      const hint = obj instanceof Date ? " (return date.toISOString())" : "";
      throw new SerializationError(path, `a ${kind} instance does not survive JSON${hint}; return plain data`);
    }
    for (const [k, v] of Object.entries(obj)) visit(v, `${path}.${k}`, seen);
  }
  seen.delete(obj);
}

/** JSON with object keys sorted, so equal values give equal text (used to compare run inputs). */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (v === null || typeof v !== "object" || Array.isArray(v)) return v;
    const sorted: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) sorted[k] = (v as Record<string, unknown>)[k];
    return sorted;
  }) ?? "null";
}

/** Largest value (step result, run result, signal payload), as JSON bytes, a journal takes by default. */
export const DEFAULT_MAX_VALUE_BYTES = 256 * 1024;

/** Largest run input, as JSON bytes: it shares the run's meta item with the run's result. */
export const DEFAULT_MAX_INPUT_BYTES = 128 * 1024;

/** The size of a value as UTF-8 JSON. */
export function jsonBytes(value: unknown): number {
  const text = JSON.stringify(value);
  return text === undefined ? 0 : utf8Bytes(text);
}

const NON_ASCII = /[^\x00-\x7f]/;

/** UTF-8 length of `text` without encoding it (ASCII text, the usual case, is its own length). */
export function utf8Bytes(text: string): number {
  if (!NON_ASCII.test(text)) return text.length;
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 4; // a surrogate pair: one code point
      i++;
    } else bytes += 3; // the rest of the BMP; a lone surrogate is encoded as U+FFFD (3 bytes)
  }
  return bytes;
}
