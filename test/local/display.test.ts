/**
 * One rule for durations and one total formatter for instants, wherever a run is shown (the CLI
 * timeline, the dashboard's table and its waterfall): a one-hour sleep reads "1.0 h" whether its
 * record was written on the millisecond or a few ms after the wake was scheduled.
 */
import { describe, expect, it } from "vitest";
import type { HistoryEntry } from "../../lib/client.ts";
import { durationText, elapsedText, instantText, isInstant } from "../../lib/http/display.ts";
import { timelineRows } from "../../lib/cli/timeline.ts";

const t = Date.UTC(2026, 2, 1, 12);
const entry = (record: Record<string, unknown>): HistoryEntry => ({ key: `${String(record.type)}#${String(record.stepId)}`, at: record.at as number, record: { v: 1, ...record } as unknown as HistoryEntry["record"] });

describe("durations", () => {
  it("pick the unit after rounding, so no value reads as 60 of the smaller unit", () => {
    expect(durationText(0)).toBe("0 ms");
    expect(durationText(999.4)).toBe("999 ms");
    expect(durationText(999.6)).toBe("1.0 s");
    expect(durationText(1_250)).toBe("1.3 s");
    expect(durationText(59_949)).toBe("59.9 s");
    expect(durationText(59_990)).toBe("1.0 min");
    expect(durationText(3_599_996)).toBe("1.0 h");
    expect(durationText(3_600_000)).toBe("1.0 h");
    expect(durationText(86_399_000)).toBe("1.0 d");
    expect(durationText(36 * 3_600_000)).toBe("1.5 d");
    expect(durationText(8.64e15)).toBe("100000000.0 d");
  });

  it("are empty for what is not one (negative from clock skew, NaN, infinite, not a number)", () => {
    for (const v of [-1, Number.NaN, Number.POSITIVE_INFINITY, "5", undefined]) expect(durationText(v)).toBe("");
    expect(elapsedText(t, t + 8.64e15)).toBe(""); // the end is past the date range
    expect(elapsedText(t, t + 1_500)).toBe("1.5 s");
  });

  it("read the same in the CLI timeline and the dashboard's table: a 1 h sleep written 4 ms late is 1.0 h", () => {
    const rows = timelineRows([
      entry({ type: "step", kind: "run", stepId: "work", status: "ok", result: 1, attempts: 1, startedAt: t, at: t + 59_990 }),
      entry({ type: "step", kind: "sleep", stepId: "nap", wakeAt: t + 60_000 + 3_600_000, at: t + 60_004 }),
    ]);
    expect(rows.map((r) => r.duration)).toEqual(["1.0 min", "1.0 h"]);
  });
});

describe("instants", () => {
  it("are ISO text inside the date range and 'invalid date' outside it", () => {
    expect(instantText(t)).toBe("2026-03-01T12:00:00.000Z");
    expect(instantText(8.64e15)).toBe("+275760-09-13T00:00:00.000Z");
    for (const v of [8.64e15 + 1, -8.64e15 - 1, Number.NaN, 1e300, Number.NEGATIVE_INFINITY, "2026"]) {
      expect(isInstant(v)).toBe(false);
      expect(instantText(v)).toBe("invalid date");
    }
  });
});
