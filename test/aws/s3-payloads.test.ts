/**
 * The S3 payload store. Two halves:
 *
 * 1. Against s3rver, the local S3 peer (real HTTP, real SigV4, objects on disk): round trips of
 *    binary-exact bytes, a put repeated (a retry after a lost response) is success, a missing key
 *    reads as `undefined`, a missing bucket is an error (never "no object").
 * 2. Against the SDK (aws-sdk-client-mock), for what s3rver cannot show. s3rver 3.7.1 ignores
 *    `If-None-Match` on PutObject (it overwrites; it honours it only on GetObject, as 304), ignores
 *    `x-amz-checksum-sha256` (no `BadDigest`), and never answers 412 `PreconditionFailed` or 409
 *    `ConditionalRequestConflict`. So: the put carries `IfNoneMatch: "*"` and the body's SHA-256;
 *    412 is an earlier put of the same content-addressed key (success); 409 is sent again; any
 *    other failure (throttling, `BadDigest`, access denied) is thrown, so the wake is retried.
 */
import { GetObjectCommand, PutObjectCommand, S3Client, S3ServiceException } from "@aws-sdk/client-s3";
import { mockClient } from "aws-sdk-client-mock";
import { createHash } from "node:crypto";
import { afterAll, describe, expect, it } from "vitest";
import { S3PayloadStore } from "../../lib/aws/s3-payloads.ts";
import { localS3Client } from "../setup/clients.ts";
import { PAYLOAD_BUCKET } from "../setup/s3-peer.ts";

describe("on s3rver", () => {
  const client = localS3Client();
  const store = new S3PayloadStore({ bucket: PAYLOAD_BUCKET, client });
  afterAll(() => client.destroy());

  it("stores and reads back bytes exactly, 1 MiB included", async () => {
    const body = new Uint8Array(1024 * 1024).map((_, i) => (i * 31) % 256);
    await store.put("runs/c-1/1/one", body);
    expect(await store.get("runs/c-1/1/one")).toEqual(body);
  });

  it("a put sent again (its first answer lost) succeeds and leaves the same object", async () => {
    const body = new TextEncoder().encode(JSON.stringify({ a: "é".repeat(1000) }));
    await store.put("runs/c-2/1/k", body);
    await store.put("runs/c-2/1/k", body);
    expect(await store.get("runs/c-2/1/k")).toEqual(body);
  });

  it("a key never written reads as undefined; a bucket that does not exist is an error", async () => {
    expect(await store.get("runs/nobody/1/none")).toBeUndefined();
    const elsewhere = new S3PayloadStore({ bucket: "no-such-bucket", client });
    await expect(elsewhere.get("runs/x/1/y")).rejects.toMatchObject({ name: "NoSuchBucket" });
  });
});

describe("against the SDK: the conditions s3rver does not honour", () => {
  const client = new S3Client({ region: "us-east-1", credentials: { accessKeyId: "x", secretAccessKey: "x" } });
  const s3 = mockClient(client); // this instance only: the s3rver client above stays real
  const store = new S3PayloadStore({ bucket: "b", client });
  const body = new TextEncoder().encode('"value"');
  const fail = (name: string, status: number) => new S3ServiceException({ name, $fault: "client", $metadata: { httpStatusCode: status } });

  it("puts write-once (If-None-Match: *) with the body's SHA-256 for S3 to check", async () => {
    s3.reset();
    s3.on(PutObjectCommand).resolves({});
    await store.put("runs/r/1/k", body);
    expect(s3.commandCalls(PutObjectCommand)[0]?.args[0].input).toMatchObject({
      Bucket: "b",
      Key: "runs/r/1/k",
      IfNoneMatch: "*",
      ChecksumSHA256: createHash("sha256").update(body).digest("base64"),
    });
  });

  it("412 PreconditionFailed: the object is already there (content-addressed: the same bytes), success", async () => {
    s3.reset();
    s3.on(PutObjectCommand).rejects(fail("PreconditionFailed", 412));
    await expect(store.put("runs/r/1/k", body)).resolves.toBeUndefined();
  });

  it("409 ConditionalRequestConflict: another put of the key in flight, sent again", async () => {
    s3.reset();
    s3.on(PutObjectCommand).rejectsOnce(fail("ConditionalRequestConflict", 409)).resolves({});
    await store.put("runs/r/1/k", body);
    expect(s3.commandCalls(PutObjectCommand)).toHaveLength(2);
  });

  it("BadDigest, throttling and access denied are thrown (the invocation is retried), never taken for success", async () => {
    for (const [name, status] of [["BadDigest", 400], ["SlowDown", 503], ["AccessDenied", 403]] as const) {
      s3.reset();
      s3.on(PutObjectCommand).rejects(fail(name, status));
      await expect(store.put("runs/r/1/k", body)).rejects.toMatchObject({ name });
    }
  });

  it("NoSuchKey reads as undefined; other read failures are thrown", async () => {
    s3.reset();
    s3.on(GetObjectCommand).rejects(fail("NoSuchKey", 404));
    expect(await store.get("runs/r/1/k")).toBeUndefined();
    s3.reset();
    s3.on(GetObjectCommand).rejects(fail("AccessDenied", 403));
    await expect(store.get("runs/r/1/k")).rejects.toMatchObject({ name: "AccessDenied" });
  });
});
