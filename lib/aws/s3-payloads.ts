/**
 * Payloads by reference in S3: one object per value, under a content-addressed key (see
 * `lib/core/payloads.ts`). The SDK loads on the first put or get, never at import.
 *
 * Requests and their conditions:
 *   PutObject  `If-None-Match: *` (write-once, as the journal's records are) and
 *              `x-amz-checksum-sha256` (S3 refuses a body that does not hash to it: `BadDigest`).
 *              412 `PreconditionFailed`: the key is there already, and content-addressed keys
 *              hold the same bytes: success (a retry after a lost response, or the same value
 *              twice). 409 `ConditionalRequestConflict` (another put of the key in flight): sent
 *              again, a few times.
 *   GetObject  404 `NoSuchKey` → `undefined` (the core fails the run: `PayloadMissingError`).
 *              The core checks the bytes against the journal's hash on every read.
 * Any other error is thrown as it is: the invocation is retried with its wake.
 */
import { createHash } from "node:crypto";
import type { S3Client } from "@aws-sdk/client-s3";
import type { PayloadStore } from "../ports.ts";
import { s3Sdk } from "./sdk.ts";

/** Options of `S3PayloadStore`: the bucket and its client. */
export interface S3PayloadStoreOptions {
  bucket: string;
  /** Injected (tests, custom endpoints); default a client created on first use. */
  client?: S3Client;
}

/** How often a put that meets another put of the same key in flight (409) is sent again. */
const CONFLICT_ATTEMPTS = 4;

/**
 * The payload store of the AWS runtime (the bucket the CDK construct creates).
 *
 * @example
 * ```ts
 * const store = new S3PayloadStore({ bucket: process.env.WAYMARK_PAYLOAD_BUCKET! });
 * const engine = new Engine({ ...ports, owner: "w", payloads: { store } });
 * ```
 */
export class S3PayloadStore implements PayloadStore {
  private client: Promise<S3Client> | undefined;

  constructor(private readonly o: S3PayloadStoreOptions) {
    if (o.client) this.client = Promise.resolve(o.client);
  }

  async put(key: string, body: Uint8Array): Promise<void> {
    const [client, { PutObjectCommand }] = await Promise.all([this.s3(), s3Sdk()]);
    const checksum = createHash("sha256").update(body).digest("base64");
    for (let attempt = 1; ; attempt++) {
      try {
        await client.send(
          new PutObjectCommand({ Bucket: this.o.bucket, Key: key, Body: body, ContentType: "application/json", IfNoneMatch: "*", ChecksumSHA256: checksum }),
        );
        return;
      } catch (err) {
        if (isError(err, "PreconditionFailed", 412)) return; // already stored: the same bytes
        if (isError(err, "ConditionalRequestConflict", 409) && attempt < CONFLICT_ATTEMPTS) {
          await new Promise((r) => setTimeout(r, 50 * attempt));
          continue;
        }
        throw err;
      }
    }
  }

  async get(key: string): Promise<Uint8Array | undefined> {
    const [client, { GetObjectCommand }] = await Promise.all([this.s3(), s3Sdk()]);
    try {
      const out = await client.send(new GetObjectCommand({ Bucket: this.o.bucket, Key: key }));
      if (!out.Body) return new Uint8Array();
      return await out.Body.transformToByteArray();
    } catch (err) {
      if (isError(err, "NoSuchKey", 404)) return undefined;
      throw err;
    }
  }

  private s3(): Promise<S3Client> {
    return (this.client ??= s3Sdk().then(({ S3Client }) => new S3Client({})));
  }
}

function isError(err: unknown, name: string, status: number): boolean {
  if (typeof err !== "object" || err === null) return false;
  const e = err as { name?: unknown; Code?: unknown; $metadata?: { httpStatusCode?: unknown } };
  return e.name === name || e.Code === name || (e.$metadata?.httpStatusCode === status && (e.name === "Unknown" || e.name === undefined || e.name === name));
}
