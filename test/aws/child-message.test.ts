/** The child-end message a child in another function sends to its parent's wake queue. */
import { describe, expect, it } from "vitest";
import { CHILD_END_MAX_BYTES, formatChildEndMessage, isChildEndMessage, parseChildEndMessage } from "../../lib/aws/child-message.ts";
import { MalformedWakeError } from "../../lib/aws/errors.ts";
import { formatWakeMessage } from "../../lib/aws/wake-message.ts";

const parent = { runId: "order-1", waitId: "pay", incarnation: 2, replyTo: "https://sqs.eu-west-1.amazonaws.com/1/orders" };

describe("the child-end message", () => {
  it("carries the parent's wait and the child's outcome, and reads back as it was sent (not the reply queue: it is where it arrived)", () => {
    const body = formatChildEndMessage({ parent, childRunId: "order-1:pay", outcome: { status: "completed", result: { receipt: "r-9", cents: 1200 } } });
    expect(isChildEndMessage(body)).toBe(true);
    expect(parseChildEndMessage(body)).toEqual({ parent: { runId: "order-1", waitId: "pay", incarnation: 2 }, childRunId: "order-1:pay", outcome: { status: "completed", result: { receipt: "r-9", cents: 1200 } } });
    const failed = formatChildEndMessage({ parent, childRunId: "c", outcome: { status: "failed", error: { name: "NonRetryableError", message: "card declined", fields: { code: "x" } } } });
    expect(parseChildEndMessage(failed).outcome).toEqual({ status: "failed", error: { name: "NonRetryableError", message: "card declined", fields: { code: "x" } } });
  });

  it("is never mistaken for a wake, nor a wake for it", () => {
    expect(isChildEndMessage(formatWakeMessage({ runId: "r", reason: "start", key: "start", at: 1 }))).toBe(false);
    expect(isChildEndMessage("not json")).toBe(false);
    expect(isChildEndMessage("null")).toBe(false);
  });

  it("an outcome too large for one SQS message goes as a failure naming the size, so the parent is not left waiting", () => {
    const big = "x".repeat(CHILD_END_MAX_BYTES);
    const body = formatChildEndMessage({ parent, childRunId: "order-1:pay", outcome: { status: "completed", result: big } });
    expect(Buffer.byteLength(body)).toBeLessThan(4096);
    const { outcome } = parseChildEndMessage(body);
    expect(outcome.status).toBe("failed");
    expect(outcome.error).toMatchObject({ name: "ValueTooLargeError", fields: { limitBytes: CHILD_END_MAX_BYTES } });
    expect(outcome.error?.message).toContain("result of child run order-1:pay");
  });

  it("refuses what is not one, saying what is wrong (not retryable: the message goes to the DLQ)", () => {
    const bad = (body: string) => {
      try {
        parseChildEndMessage(body);
      } catch (err) {
        expect(err).toBeInstanceOf(MalformedWakeError);
        expect((err as MalformedWakeError).retryable).toBe(false);
        return (err as MalformedWakeError).message;
      }
      throw new Error("parsed");
    };
    expect(bad("{")).toMatch(/not JSON/);
    expect(bad(JSON.stringify({ v: 1, kind: "child-end", runId: "r", waitId: "w", childRunId: "c", outcome: { status: "done" } }))).toMatch(/outcome\.status/);
    expect(bad(JSON.stringify({ v: 1, kind: "child-end", runId: "r", childRunId: "c", outcome: { status: "completed" } }))).toMatch(/waitId/);
    expect(bad(JSON.stringify({ v: 2, kind: "child-end", runId: "r", waitId: "w", childRunId: "c", outcome: { status: "completed" } }))).toMatch(/v/);
  });
});
