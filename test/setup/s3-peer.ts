/**
 * The local S3 peer: `s3rver` (npm, pure Node) on loopback, with a bucket for payloads. It is
 * the closest local peer on the registries reached here. What it does not do is listed in
 * test/aws/s3-payloads.test.ts, which covers those conditions against the SDK instead.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { S3Client } from "@aws-sdk/client-s3";
import S3rver from "s3rver";
import { LOCAL_REGION } from "./local-aws.ts";

/** The bucket the peer starts with. */
export const PAYLOAD_BUCKET = "waymark-payloads";
/** s3rver's built-in account: it checks request signatures against this key. */
export const S3RVER_CREDENTIALS = { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" };

export async function startS3Peer(): Promise<{ endpoint: string; stop: () => Promise<void> }> {
  const directory = mkdtempSync(join(tmpdir(), "waymark-s3rver-"));
  const server = new S3rver({ address: "127.0.0.1", port: 0, silent: true, directory, configureBuckets: [{ name: PAYLOAD_BUCKET }] });
  const { port } = await server.run();
  return {
    endpoint: `http://127.0.0.1:${port}`,
    stop: async () => {
      await server.close();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}

/** A client for an s3rver endpoint (path-style: s3rver serves no virtual-host buckets on 127.0.0.1). */
export function s3PeerClient(endpoint: string): S3Client {
  return new S3Client({ endpoint, region: LOCAL_REGION, credentials: S3RVER_CREDENTIALS, forcePathStyle: true });
}
