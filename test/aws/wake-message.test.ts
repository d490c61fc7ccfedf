/** The wake message format: pointers only, parsed strictly, with a clear error otherwise. */
import { describe, expect, it } from "vitest";
import { MalformedWakeError } from "../../lib/aws/errors.ts";
import { formatWakeMessage, parseWakeMessage, topUpDelaySeconds } from "../../lib/aws/wake-message.ts";
import type { Wake } from "../../lib/ports.ts";

const wake: Wake = { runId: "order-8472", reason: "sleep", key: "sleep:cool-off", at: 1_767_225_600_000 };

describe("wake messages", () => {
  it("carry exactly v, runId, reason, key and at, and parse back", () => {
    const body = formatWakeMessage(wake);
    expect(JSON.parse(body)).toEqual({ v: 1, runId: "order-8472", reason: "sleep", key: "sleep:cool-off", at: 1_767_225_600_000 });
    expect(parseWakeMessage(body)).toEqual(wake);
  });

  it.each([
    ["not JSON", "wake me", /not JSON/],
    ["another version", JSON.stringify({ ...wake, v: 2 }), /version 2/],
    ["no version", JSON.stringify(wake), /version undefined/],
    ["a JSON array", "[1]", /version/],
    ["an empty run id", JSON.stringify({ v: 1, ...wake, runId: "" }), /runId/],
    ["an unknown reason", JSON.stringify({ v: 1, ...wake, reason: "nap" }), /reason/],
    ["a missing key", JSON.stringify({ v: 1, runId: "r", reason: "sleep", at: 1 }), /key/],
    ["a time that is a string", JSON.stringify({ v: 1, ...wake, at: "soon" }), /at/],
  ])("are refused with MalformedWakeError when the body is %s", (_label, body, problem) => {
    let err: unknown;
    try {
      parseWakeMessage(body);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(MalformedWakeError);
    expect(err).toMatchObject({ name: "MalformedWakeError", retryable: false });
    expect((err as Error).message).toMatch(problem);
  });

  it("say how long to hold a wake that came early (Scheduler fires within the minute)", () => {
    expect(topUpDelaySeconds(wake, wake.at)).toBe(0);
    expect(topUpDelaySeconds(wake, wake.at + 5_000)).toBe(0);
    expect(topUpDelaySeconds(wake, wake.at - 1)).toBe(1);
    expect(topUpDelaySeconds(wake, wake.at - 42_100)).toBe(43);
    expect(topUpDelaySeconds(wake, wake.at - 3_600_000)).toBe(900);
  });
});
