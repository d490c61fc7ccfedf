/**
 * `failoverTimings`: the lease TTL and wake queue visibility the construct derives from a
 * function timeout, for every timeout Lambda allows (1–900 s), and the configuration's
 * deadline margin.
 */
import { describe, expect, it } from "vitest";
import { ConfigurationError, configFromEnv, DEFAULT_DEADLINE_MARGIN_MS, ENV, failoverTimings, START_SLACK_SECONDS } from "../../lib/aws/config.ts";

const ALL_TIMEOUTS = Array.from({ length: 900 }, (_, i) => i + 1);
const MIN_ENV = {
  [ENV.tableName]: "t",
  [ENV.queueUrl]: "https://sqs/q",
  [ENV.queueArn]: "arn:aws:sqs:r:1:q",
  [ENV.scheduleGroup]: "g",
  [ENV.schedulerRoleArn]: "arn:aws:iam::1:role/s",
  [ENV.schedulerDeadLetterArn]: "arn:aws:sqs:r:1:dlq",
};

describe("failoverTimings", () => {
  it("the defaults' figures: a 1-minute function has a 10 s lease and an 85 s visibility timeout, its worst case to resume", () => {
    expect(failoverTimings(60)).toEqual({ leaseTtlMs: 10_000, visibilityTimeoutSeconds: 85, worstCaseResumeMs: 85_000 });
    expect(failoverTimings(900)).toEqual({ leaseTtlMs: 150_000, visibilityTimeoutSeconds: 1_065, worstCaseResumeMs: 1_065_000 });
    expect(failoverTimings(3)).toEqual({ leaseTtlMs: 3_000, visibilityTimeoutSeconds: 21, worstCaseResumeMs: 21_000 });
  });

  it.each(ALL_TIMEOUTS.filter((t) => t % 7 === 1 || t < 12 || t === 900))("timeout %i s: a lapsed lease by the time a crashed invocation's wake reappears, and nothing SQS or Lambda refuses", (t) => {
    const { leaseTtlMs, visibilityTimeoutSeconds, worstCaseResumeMs } = failoverTimings(t);
    // The invocation can run until its timeout; once it dies its lease lapses within one TTL.
    expect(visibilityTimeoutSeconds * 1_000).toBeGreaterThanOrEqual(t * 1_000 + leaseTtlMs + START_SLACK_SECONDS * 1_000);
    // The lease never outlives the invocation by more than the invocation itself.
    expect(leaseTtlMs).toBeLessThanOrEqual(t * 1_000);
    // An abandoned body keeps the lease until the function ends: a renewed lease (2/3 TTL left) outlasts the deadline margin.
    expect((leaseTtlMs * 2) / 3).toBeGreaterThan(Math.min(DEFAULT_DEADLINE_MARGIN_MS, (t * 1_000) / 10));
    // SQS: whole seconds, at most 12 h; Lambda's event source requires at least the function timeout.
    expect(Number.isInteger(visibilityTimeoutSeconds)).toBe(true);
    expect(visibilityTimeoutSeconds).toBeLessThanOrEqual(12 * 3_600);
    expect(visibilityTimeoutSeconds).toBeGreaterThan(t);
    expect(worstCaseResumeMs).toBe(visibilityTimeoutSeconds * 1_000);
  });

  it("refuses a timeout that is not a positive number", () => {
    for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) expect(() => failoverTimings(bad)).toThrow(ConfigurationError);
  });
});

describe("WAYMARK_DEADLINE_MARGIN_MS", () => {
  it("is optional, read when set, and refused when not a positive number", () => {
    expect(configFromEnv(MIN_ENV).deadlineMarginMs).toBeUndefined();
    expect(configFromEnv({ ...MIN_ENV, [ENV.deadlineMarginMs]: "500" }).deadlineMarginMs).toBe(500);
    expect(() => configFromEnv({ ...MIN_ENV, [ENV.deadlineMarginMs]: "soon" })).toThrow(/WAYMARK_DEADLINE_MARGIN_MS must be a positive number/);
  });
});
