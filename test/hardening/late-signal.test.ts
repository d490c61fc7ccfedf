/**
 * Issue 8, item 11: a by-name signal that comes after its wait timed out (the run still going)
 * was answered 202 "buffered" and never consumed. The sender now learns it lost: 409 with the
 * recorded decision, as for links (the webhook maps WaitResolvedError to 409); the signal is
 * kept as a late event. On a real SQLite journal.
 */
import { afterEach, describe, expect, it } from "vitest";
import { durable, WaitResolvedError } from "waymark";
import { type SqliteLab, sqliteLab } from "../support/sqlite-lab.ts";
import { Approval, Empty } from "../core/helpers.ts";

const flow = durable({ name: "approve-or-remind", input: Empty, signals: { approval: Approval } }, async (_in, step) => {
  const first = await step.waitForSignal("approval", { timeout: "1h" });
  if (first.received) return "approved";
  await step.sleep("grace", "1d"); // the run goes on after the timeout
  return "expired";
});

let lab: SqliteLab;
afterEach(() => lab?.close());

describe("a by-name signal after its wait timed out", () => {
  it("is refused with the timeout decision and kept as a late event, not buffered", async () => {
    lab = sqliteLab([flow]);
    await lab.client().start(flow, { runId: "late-1", input: {} });
    await lab.engine("w").invoke("late-1");
    lab.clock.advance(3_600_000);
    expect(await lab.engine("w").invoke("late-1")).toMatchObject({ status: "suspended", waitingFor: "sleep:grace" });

    const err = await lab.client().signal("late-1", "approval", { approved: true, approver: "ana" }, { signalId: "too-late" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WaitResolvedError);
    expect(err).toMatchObject({ waitId: "approval", decision: { via: "timeout" } });
    const entry = (await lab.client().history("late-1")).entries.find((e) => e.key === "signal#too-late");
    expect(entry?.lateFor).toBe("approval");
  });

  it("is still buffered when no wait for it was recorded yet", async () => {
    lab = sqliteLab([flow]);
    await lab.client().start(flow, { runId: "early-1", input: {} });
    expect(await lab.client().signal("early-1", "approval", { approved: true, approver: "ana" }, { signalId: "early" })).toEqual({ signalId: "early", status: "buffered" });
    expect(await lab.engine("w").invoke("early-1")).toEqual({ status: "completed", result: "approved" });
  });
});
