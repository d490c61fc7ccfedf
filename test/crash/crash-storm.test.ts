/**
 * A crash storm on an at-least-once step: worker processes in a row are SIGKILLed right after the
 * `charge` body starts (`crash-charge`: prepare → charge), then one more finishes the run.
 *
 * How the counting works (records.ts, `possibleReruns`): every record carries the invocation that
 * wrote it (`inv`, the run's grant count). With `prepare`: invocation 1 records `prepare`, starts
 * the charge body and dies; invocations 2..K each start it and die without recording anything;
 * invocation K+1 runs it and records it. Each of the K killed invocations may have run the body,
 * so the record must say `attempts: 1, possibleReruns: K`, and `attempts + possibleReruns` is
 * exactly the number of times the body started (K+1, from the executions log): the bound
 * records.ts promises ("the body ran between `attempts` and `attempts + possibleReruns` times")
 * is tight here, since every invocation that died had started the body. Without `prepare`,
 * `charge` is the run's first step and the journal is empty until it is recorded: the K killed
 * invocations may all have run it just the same.
 */
import { describe, it } from "vitest";
import type { JournalRecord } from "waymark";
import { withLab } from "./harness.ts";
import { chargeFlow } from "./workflows.ts";

describe("crash storm on an at-least-once step", () => {
  it.for([
    { kills: 10, prepare: true, where: "after a recorded step" },
    { kills: 3, prepare: false, where: "as the run's first step (an empty journal)" },
  ])(
    "$kills SIGKILLs right after the charge body starts, $where, then a clean worker: one charge, attempts 1, possibleReruns $kills",
    { timeout: 90_000 },
    async ({ kills, prepare }, { expect }) => {
      await withLab(async (lab) => {
        const runId = `storm-${prepare ? "prepared" : "first"}`;
        await lab.client.start(chargeFlow, { runId, input: { orderId: "8472", amount: 129.5, semantics: "at-least-once", prepare } });
        for (let k = 1; k <= kills; k++) {
          const worker = lab.spawn({ label: String(k), runs: [runId], crashAt: "started:charge" });
          await worker.exit;
          expect(worker.exited?.signal, `worker ${k} reached the crash point\n${worker.describe()}`).toBe("SIGKILL");
          expect(lab.log.of(runId, "charge"), `charge bodies started after ${k} kills`).toHaveLength(k);
        }
        const last = lab.spawn({ label: "last", runs: [runId] });
        const run = await lab.finished(runId);
        await last.exit;
        expect(last.exited?.code, last.describe()).toBe(0);
        expect(run.status, JSON.stringify(run)).toBe("completed");

        const executions = lab.log.of(runId, "charge");
        expect(executions.map((e) => e.worker)).toEqual([...Array.from({ length: kills }, (_, i) => String(i + 1)), "last"]);
        expect(new Set(executions.map((e) => e.key))).toEqual(new Set([`${runId}/charge`]));
        expect(lab.log.of(runId, "prepare").map((e) => e.worker), "prepare ran once, before the first kill").toEqual(prepare ? ["1"] : []);
        const ledger = lab.charges();
        expect(ledger, "charges in the provider's ledger").toHaveLength(1);
        expect(run.result).toEqual({ status: "charged", chargeId: ledger[0]?.chargeId });

        const records = await lab.records(runId);
        const step = (id: string) => records.find((r): r is Extract<JournalRecord, { type: "step"; kind: "run" }> => r.type === "step" && r.kind === "run" && r.stepId === id);
        if (prepare) expect(step("prepare")?.inv, "prepare was recorded by the first invocation").toBe(1);
        const charge = step("charge");
        expect(charge?.inv, "charge was recorded by the invocation after the killed ones").toBe(kills + 1);
        expect(charge, JSON.stringify(charge)).toMatchObject({ status: "ok", attempts: 1, possibleReruns: kills });
        expect((charge?.attempts ?? 0) + (charge?.possibleReruns ?? 0), "attempts + possibleReruns = bodies started").toBe(executions.length);
      });
    },
  );
});
