/**
 * The ledger charges what an answer tells to the execution that asked (soak seed 1281778365,
 * "cancel-unseen"): an invocation whose lease was lost while its step body ran writes that
 * body's record when it returns, and the append's answer shows the cancellation written since;
 * the next invocation of the run in the same worker, which loaded the journal before the
 * cancellation, heard nothing from it and may start a forward step.
 */
import { describe, expect, it } from "vitest";
import { Ledger } from "./ledger.ts";

const forward = { role: "forward" } as const;
const stepRecord = { key: "step#first", body: { type: "step", kind: "run", stepId: "first", status: "ok", attempts: 1 } };
const cancel = { key: "cancel", body: { type: "cancel", reason: "test" } };

describe("the ledger", () => {
  it("does not charge an ended invocation's append to the next invocation of the run in the same worker", () => {
    const ledger = new Ledger(() => {});
    const old = ledger.beginExec("w1", "r0");
    expect(ledger.bodyStart("w1", "r0", "first", 1, forward)).toBeDefined();
    ledger.endExec(old, "lost-lease"); // its body still runs
    const next = ledger.beginExec("w1", "r0");
    ledger.applied("w1", "loadJournal", ["r0"], {}, true, next)?.();
    ledger.applied("client", "appendRecord", ["r0", cancel], { written: true }, true)?.();
    // The old execution's body returns; its record's append finds the cancellation.
    ledger.applied("w1", "appendRecord", ["r0", stepRecord, "cancel"], { written: true, probed: cancel }, true, old)?.();
    ledger.bodyStart("w1", "r0", "first", 1, forward);
    expect(ledger.violation).toBeUndefined();
  });

  it("still holds the asking invocation to what it heard", () => {
    const ledger = new Ledger(() => {});
    const exec = ledger.beginExec("w1", "r0");
    ledger.applied("w1", "loadJournal", ["r0"], {}, true, exec)?.();
    ledger.applied("client", "appendRecord", ["r0", cancel], { written: true }, true)?.();
    ledger.applied("w1", "appendRecord", ["r0", { key: "step#zero", body: { type: "step", kind: "run", stepId: "zero", attempts: 1 } }, "cancel"], { written: true, probed: cancel }, true, exec)?.();
    ledger.bodyStart("w1", "r0", "first", 1, forward);
    expect(ledger.violation?.kind).toBe("cancel-unseen");
  });

  // Flow story seed 8018331: a whole-machine pause (a clock jump) let the run's lease lapse while
  // its body ran; the next invocation took the run, kept the run's slot and started that step
  // again beside the old body. One run of the key, twice: the at-least-once gap, not a second run.
  it("counts runs against a key's limit: the same run's body started again after a pause is not a second run; another run's is", () => {
    const limited = { role: "forward", flowKey: "sim-limited:k1" } as const;
    const ledger = new Ledger(() => {});
    ledger.beginExec("w3", "r0");
    ledger.bodyStart("w3", "r0", "second", 1, limited);
    ledger.pauseAll(); // its lease lapses; the body goes on after the pause
    ledger.beginExec("w2", "r0");
    ledger.bodyStart("w2", "r0", "second", 1, limited);
    expect(ledger.violation).toBeUndefined();
    ledger.beginExec("w2", "r1");
    ledger.bodyStart("w2", "r1", "first", 1, limited);
    expect(ledger.violation?.kind).toBe("limit-exceeded");
  });
});
