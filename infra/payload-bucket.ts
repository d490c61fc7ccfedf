/**
 * The bucket for values stored by reference (`S3PayloadStore`): private, encrypted, TLS only,
 * and emptied by a lifecycle rule that follows the journal's retention.
 */
import { Duration, type RemovalPolicy } from "aws-cdk-lib";
import * as s3 from "aws-cdk-lib/aws-s3";
import type { Construct } from "constructs";

/** Where payload keys start (`runs/<runId>/<createdAt>/<sha256>`): the function's grant and the lifecycle rule cover this prefix. */
export const PAYLOAD_PREFIX = "runs/";

export interface PayloadBucketProps {
  /** Days the journal keeps a finished run. */
  retentionDays: number;
  /** The longest a run is expected to be in flight: an object written at its start must outlive it. */
  maxRunDays: number;
  removalPolicy: RemovalPolicy;
}

/**
 * Creates the payload bucket. Objects expire `maxRunDays + retentionDays` after they are written:
 * S3 counts from an object's creation, not from its run's end, so a value written on a run's first
 * day is still there for the run's whole retention as long as the run finishes within `maxRunDays`.
 *
 * @example
 * ```ts
 * const bucket = payloadBucket(this, "Payloads", { retentionDays: 30, maxRunDays: 365, removalPolicy: RemovalPolicy.RETAIN });
 * ```
 */
export function payloadBucket(scope: Construct, id: string, props: PayloadBucketProps): s3.Bucket {
  return new s3.Bucket(scope, id, {
    encryption: s3.BucketEncryption.S3_MANAGED,
    enforceSSL: true,
    blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
    objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
    lifecycleRules: [
      { id: "payload-retention", prefix: PAYLOAD_PREFIX, expiration: Duration.days(props.maxRunDays + props.retentionDays) },
      { id: "abort-incomplete-uploads", abortIncompleteMultipartUploadAfter: Duration.days(1) },
    ],
    removalPolicy: props.removalPolicy,
  });
}
