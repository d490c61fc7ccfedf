/**
 * The payload port: values kept by reference outside the journal (part of the ports, `lib/ports.ts`).
 */
/**
 * Where a value stored by reference lives, as the journal records it instead of the value: a
 * step's `resultRef`, a signal's `payloadRef`, and a run's input or result in its meta record
 * (see `lib/core/payloads.ts`).
 */
export interface PayloadRef {
  /** `runs/<runId>/<createdAt>/<sha256>`: content-addressed within one incarnation of the run id. */
  key: string;
  /** SHA-256 of the stored bytes (UTF-8 JSON), hex; every read is checked against it. */
  sha256: string;
  /** Size of the stored bytes. */
  bytes: number;
}

/**
 * Where values too large to journal inline are kept: S3 on AWS, a directory beside the SQLite
 * file locally, memory in tests. Keys are content-addressed, so a `put` is idempotent: writing a
 * key again (a retry after a lost response, or the same value twice) stores the same bytes and
 * succeeds. Objects are never overwritten with other bytes.
 */
export interface PayloadStore {
  /** Stores `body` under `key` unless it is already there; succeeds either way. */
  put(key: string, body: Uint8Array): Promise<void>;
  /** The stored bytes, or `undefined` when no object has that key (deleted, or never written). */
  get(key: string): Promise<Uint8Array | undefined>;
  /**
   * Deletes every object whose key starts with `prefix` (retention: one run incarnation's
   * `runs/<runId>/<createdAt>/`). Idempotent. Optional: S3 leaves this to the bucket's lifecycle.
   */
  deletePrefix?(prefix: string): Promise<void>;
}
