/**
 * Large values by reference. A step result, run input, signal payload or run result larger than
 * the inline threshold is written to a {@link PayloadStore} as UTF-8 JSON, and the journal keeps
 * a {@link PayloadRef} (key, SHA-256, size) in its place:
 *
 *   step record     `resultRef` instead of `result`
 *   signal record   `payloadRef` instead of `payload`
 *   run meta        `{ "$waymarkPayload": ref }` as its `input` or `result`
 *
 * Keys are `runs/<runId>/<createdAt>/<sha256>`: content-addressed (a retried `put` writes the same
 * bytes under the same key) and bound to one incarnation of the run id (`createdAt`), so a run
 * that reuses an id after retention never reads the old run's objects. Every read is checked
 * against the recorded hash. Values over the hard cap are refused with `ValueTooLargeError`.
 */
import { WaymarkError } from "./errors.ts";
import type { PayloadRef, PayloadStore } from "../ports.ts";

/** Values above this many JSON bytes go by reference by default: well under DynamoDB's 400 KB item. */
export const DEFAULT_INLINE_PAYLOAD_BYTES = 64 * 1024;

/** The largest value (JSON bytes) stored by reference by default. */
export const DEFAULT_MAX_PAYLOAD_BYTES = 16 * 1024 * 1024;

/**
 * Where and when values go by reference.
 *
 * @example
 * ```ts
 * import { createTestRuntime, MemoryPayloadStore } from "waymark/testing";
 * const rt = createTestRuntime({ workflows: [report], payloads: { store: new MemoryPayloadStore(), inlineBytes: 16 * 1024 } });
 * ```
 */
export interface PayloadOptions {
  store: PayloadStore;
  /** Values larger than this (UTF-8 JSON bytes) are stored by reference. Default 64 KiB. */
  inlineBytes?: number;
  /** Values larger than this are refused once, non-retryably (`ValueTooLargeError`). Default 16 MiB. */
  maxBytes?: number;
}

/** A stored object is gone (deleted, expired, or never written), or no payload store is configured. */
export class PayloadMissingError extends WaymarkError {
  override readonly name = "PayloadMissingError" as const;
  readonly retryable = false;
  constructor(
    readonly key: string,
    reason = "no object has this key (deleted, expired by the bucket's lifecycle, or never written)",
  ) {
    super(`payload ${key}: ${reason}`);
  }
}

/** A stored object's bytes do not match the hash the journal recorded for them. */
export class PayloadIntegrityError extends WaymarkError {
  override readonly name = "PayloadIntegrityError" as const;
  readonly retryable = false;
  constructor(
    readonly key: string,
    readonly expected: string,
    readonly actual: string,
  ) {
    super(`payload ${key}: its bytes hash to ${actual}, the journal recorded ${expected}; the object was changed or corrupted`);
  }
}

/** A payload fault that retrying cannot mend: the run fails with it. */
export function isPayloadFault(err: unknown): err is PayloadMissingError | PayloadIntegrityError {
  return err instanceof PayloadMissingError || err instanceof PayloadIntegrityError;
}

/** The key of a value stored for one incarnation of a run. */
export function payloadKey(runId: string, createdAt: number, sha256: string): string {
  return `${runPayloadPrefix(runId, createdAt)}${sha256}`;
}

/** Every key of one incarnation of a run starts with this (for deleting them at retention). */
export function runPayloadPrefix(runId: string, createdAt: number): string {
  return `runs/${runId}/${createdAt}/`;
}

const META_FIELD = "$waymarkPayload";

/** A run's input or result as its meta record holds it when stored by reference. */
export interface MetaPayloadRef {
  readonly [META_FIELD]: PayloadRef;
}

/** The reference in a meta record's `input` or `result`, if that is what it holds. */
export function metaRef(value: unknown): PayloadRef | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  const keys = Object.keys(value);
  if (keys.length !== 1 || keys[0] !== META_FIELD) return undefined;
  const ref = (value as Record<string, unknown>)[META_FIELD];
  return isPayloadRef(ref) ? ref : undefined;
}

/** What a meta record stores in place of a value kept by reference. */
export function toMetaRef(ref: PayloadRef): MetaPayloadRef {
  return { [META_FIELD]: ref };
}

function isPayloadRef(v: unknown): v is PayloadRef {
  if (typeof v !== "object" || v === null) return false;
  const r = v as Record<string, unknown>;
  return typeof r.key === "string" && typeof r.sha256 === "string" && typeof r.bytes === "number";
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** SHA-256 as hex (Web Crypto: no I/O, no Node import). */
export async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const digest = new Uint8Array(await globalThis.crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>));
  let hex = "";
  for (const b of digest) hex += b.toString(16).padStart(2, "0");
  return hex;
}

/** A configured payload store with its thresholds: what the engine and the client use. */
export class Payloads {
  readonly inlineBytes: number;
  readonly maxBytes: number;
  readonly store: PayloadStore;

  constructor(o: PayloadOptions) {
    this.store = o.store;
    this.inlineBytes = o.inlineBytes ?? DEFAULT_INLINE_PAYLOAD_BYTES;
    this.maxBytes = o.maxBytes ?? DEFAULT_MAX_PAYLOAD_BYTES;
    if (!(this.inlineBytes > 0 && this.maxBytes >= this.inlineBytes)) {
      throw new RangeError(`payloads: need 0 < inlineBytes (${this.inlineBytes}) <= maxBytes (${this.maxBytes})`);
    }
  }

  /**
   * Stores `value` if its JSON is over the inline threshold and returns its reference; returns
   * `undefined` for a value the journal keeps inline. The caller has checked the hard cap. A
   * failed `put` throws (a transport fault: the invocation is retried, the put with it).
   */
  async offload(runId: string, createdAt: number, value: unknown): Promise<PayloadRef | undefined> {
    const text = JSON.stringify(value);
    if (text === undefined) return undefined;
    const body = encoder.encode(text);
    if (body.byteLength <= this.inlineBytes) return undefined;
    const sha256 = await sha256Hex(body);
    const key = payloadKey(runId, createdAt, sha256);
    await this.store.put(key, body);
    return { key, sha256, bytes: body.byteLength };
  }

  /** Reads a value back, checking its hash. Throws {@link PayloadMissingError} or {@link PayloadIntegrityError}. */
  async load(ref: PayloadRef): Promise<unknown> {
    const body = await this.store.get(ref.key);
    if (body === undefined) throw new PayloadMissingError(ref.key);
    const actual = await sha256Hex(body);
    if (actual !== ref.sha256) throw new PayloadIntegrityError(ref.key, ref.sha256, actual);
    return JSON.parse(decoder.decode(body)) as unknown;
  }
}

/** Reads a reference with the configured payloads, or fails clearly when none are configured. */
export function loadRef(payloads: Payloads | undefined, ref: PayloadRef): Promise<unknown> {
  if (!payloads) return Promise.reject(new PayloadMissingError(ref.key, "the journal holds this value by reference, but this runtime has no payload store configured"));
  return payloads.load(ref);
}
