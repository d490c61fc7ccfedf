/**
 * The payload bucket the construct creates for values stored by reference: private, encrypted,
 * TLS only, expiring with the journal's retention, and granted to this function only.
 */
import { Duration } from "aws-cdk-lib";
import { Match } from "aws-cdk-lib/assertions";
import { describe, expect, it } from "vitest";
import { ENV } from "waymark/aws";
import { synthDurable } from "./stack.ts";

describe("the payload bucket", () => {
  const { template, durable, id, ref } = synthDurable({ retentionDays: 30 });
  const bucketId = id(durable.payloadBucket ?? { node: {} });

  it("is encrypted, blocks every public access, and enforces bucket-owner ownership", () => {
    template.hasResourceProperties("AWS::S3::Bucket", {
      BucketEncryption: { ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: "AES256" } }] },
      PublicAccessBlockConfiguration: { BlockPublicAcls: true, BlockPublicPolicy: true, IgnorePublicAcls: true, RestrictPublicBuckets: true },
      OwnershipControls: { Rules: [{ ObjectOwnership: "BucketOwnerEnforced" }] },
    });
  });

  it("refuses every request without TLS", () => {
    template.hasResourceProperties("AWS::S3::BucketPolicy", {
      Bucket: { Ref: bucketId },
      PolicyDocument: { Statement: Match.arrayWith([Match.objectLike({ Effect: "Deny", Action: "s3:*", Principal: { AWS: "*" }, Condition: { Bool: { "aws:SecureTransport": "false" } } })]) },
    });
  });

  it("expires payload objects the longest run (365 days) plus the journal's retention after they are written", () => {
    template.hasResourceProperties("AWS::S3::Bucket", {
      LifecycleConfiguration: { Rules: Match.arrayWith([Match.objectLike({ Id: "payload-retention", Prefix: "runs/", ExpirationInDays: 395, Status: "Enabled" })]) },
    });
    const shorter = synthDurable({ retentionDays: 7, maxRunDuration: Duration.days(30) });
    shorter.template.hasResourceProperties("AWS::S3::Bucket", { LifecycleConfiguration: { Rules: Match.arrayWith([Match.objectLike({ Id: "payload-retention", ExpirationInDays: 37 })]) } });
  });

  it("only this function's role is granted, put and get under runs/ and nothing more", () => {
    const policies = template.findResources("AWS::IAM::Policy");
    const granting = Object.entries(policies).filter(([, p]) => JSON.stringify(p).includes(bucketId));
    expect(granting.map(([, p]) => (p as { Properties: { Roles: unknown } }).Properties.Roles)).toEqual([[{ Ref: id(durable.role) }]]);
    const statement = (granting[0]?.[1] as { Properties: { PolicyDocument: { Statement: Array<{ Sid?: string }> } } }).Properties.PolicyDocument.Statement.find((s) => s.Sid === "Payloads");
    expect(statement).toEqual({ Sid: "Payloads", Effect: "Allow", Action: ["s3:PutObject", "s3:GetObject"], Resource: { "Fn::Join": ["", [ref(durable.payloadBucket?.bucketArn ?? ""), "/runs/*"]] } });
  });

  it("is named to the function in WAYMARK_PAYLOAD_BUCKET, with the thresholds when given", () => {
    const t = synthDurable({ payloadInlineBytes: 32_768, payloadMaxBytes: 8_388_608 });
    t.template.hasResourceProperties("AWS::Lambda::Function", {
      Environment: { Variables: Match.objectLike({ [ENV.payloadBucket]: { Ref: t.id(t.durable.payloadBucket ?? { node: {} }) }, [ENV.payloadInlineBytes]: "32768", [ENV.payloadMaxBytes]: "8388608" }) },
    });
  });

  it("is not created with payloads: false (values over the journal's limit are then refused)", () => {
    const t = synthDurable({ payloads: false });
    t.template.resourceCountIs("AWS::S3::Bucket", 0);
    expect(t.durable.payloadBucket).toBeUndefined();
  });
});
