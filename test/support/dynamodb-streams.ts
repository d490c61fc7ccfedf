/**
 * A small DynamoDB Streams reader for DynamoDB Local, for tests only. The repository has no
 * `@aws-sdk/client-dynamodb-streams` (and adds no dependency for a test): the Streams API is a
 * plain JSON-1.0 protocol on the same endpoint (`X-Amz-Target: DynamoDBStreams_20120810.*`),
 * signed here with SigV4 over `node:crypto` (DynamoDB Local partitions data by access key, so
 * requests must carry the test credentials).
 */
import { createHash, createHmac } from "node:crypto";
import type { AttributeValue } from "@aws-sdk/client-dynamodb";
import { LOCAL_CREDENTIALS, LOCAL_REGION } from "../setup/local-aws.ts";

/** A stream record as `GetRecords` returns it (the fields the tests read). */
export interface StreamApiRecord {
  eventID: string;
  eventName: "INSERT" | "MODIFY" | "REMOVE";
  eventVersion?: string;
  eventSource?: string;
  awsRegion?: string;
  userIdentity?: { Type?: string; PrincipalId?: string };
  dynamodb: {
    ApproximateCreationDateTime?: number;
    Keys: Record<string, AttributeValue>;
    OldImage?: Record<string, AttributeValue>;
    NewImage?: Record<string, AttributeValue>;
    SequenceNumber: string;
    SizeBytes?: number;
    StreamViewType?: string;
  };
}

/** Every record the stream holds now, from the trim horizon of every shard. */
export async function readStream(endpoint: string, streamArn: string): Promise<StreamApiRecord[]> {
  const described = (await call(endpoint, "DescribeStream", { StreamArn: streamArn })) as { StreamDescription: { Shards?: Array<{ ShardId: string }> } };
  const records: StreamApiRecord[] = [];
  for (const shard of described.StreamDescription.Shards ?? []) {
    const it = (await call(endpoint, "GetShardIterator", { StreamArn: streamArn, ShardId: shard.ShardId, ShardIteratorType: "TRIM_HORIZON" })) as { ShardIterator?: string };
    let iterator = it.ShardIterator;
    // An open shard always returns a next iterator: stop at the first empty page.
    for (let pages = 0; iterator && pages < 1_000; pages++) {
      const page = (await call(endpoint, "GetRecords", { ShardIterator: iterator, Limit: 1_000 })) as { Records?: StreamApiRecord[]; NextShardIterator?: string };
      if (!page.Records?.length) break;
      records.push(...page.Records);
      iterator = page.NextShardIterator;
    }
  }
  return records;
}

async function call(endpoint: string, action: string, body: unknown): Promise<unknown> {
  const payload = JSON.stringify(body);
  const url = new URL(endpoint);
  const amzDate = new Date().toISOString().replace(/[-:]/g, "").replace(/\.\d{3}/, "");
  const day = amzDate.slice(0, 8);
  const headers: Record<string, string> = {
    "content-type": "application/x-amz-json-1.0",
    host: url.host,
    "x-amz-date": amzDate,
    "x-amz-target": `DynamoDBStreams_20120810.${action}`,
  };
  const signed = Object.keys(headers).sort();
  const canonical = ["POST", "/", "", ...signed.map((h) => `${h}:${headers[h]}`), "", signed.join(";"), sha256(payload)].join("\n");
  const scope = `${day}/${LOCAL_REGION}/dynamodb/aws4_request`;
  const toSign = ["AWS4-HMAC-SHA256", amzDate, scope, sha256(canonical)].join("\n");
  let key: Buffer = hmac(`AWS4${LOCAL_CREDENTIALS.secretAccessKey}`, day);
  for (const part of [LOCAL_REGION, "dynamodb", "aws4_request"]) key = hmac(key, part);
  const signature = createHmac("sha256", key).update(toSign).digest("hex");
  headers.authorization = `AWS4-HMAC-SHA256 Credential=${LOCAL_CREDENTIALS.accessKeyId}/${scope}, SignedHeaders=${signed.join(";")}, Signature=${signature}`;
  const res = await fetch(endpoint, { method: "POST", headers, body: payload });
  const text = await res.text();
  if (!res.ok) throw new Error(`DynamoDB Streams ${action}: ${res.status} ${text}`);
  return JSON.parse(text) as unknown;
}

const sha256 = (text: string): string => createHash("sha256").update(text).digest("hex");
const hmac = (key: string | Buffer, data: string): Buffer => createHmac("sha256", key).update(data).digest();
