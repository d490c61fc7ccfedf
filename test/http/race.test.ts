/**
 * The approval-vs-timeout race through the webhook: a signed signal and the wait's timeout at
 * the same virtual instant, 200 runs at once. Each wait is decided exactly once; the HTTP
 * caller either won (202) or is told it lost (409 with the recorded decision), and a losing
 * signal that was written is kept as a late event.
 */
import { describe, expect, it } from "vitest";
import { createTestRuntime } from "waymark/testing";
import { createHttpHandler } from "../../lib/http/handler.ts";
import type { HttpResponse } from "../../lib/http/types.ts";
import { SECRET, oneApproval, parseBody, signed } from "./helpers.ts";

const RUNS = 200;

describe("signal and timeout at the same instant", () => {
  it(`decides each of ${RUNS} waits exactly once and tells the late party`, async () => {
    const rt = createTestRuntime({ workflows: [oneApproval], webhook: { secret: SECRET } });
    const handler = createHttpHandler({ client: rt.client, secret: SECRET, clock: rt.clock });
    for (let i = 0; i < RUNS; i++) await rt.start(oneApproval, { runId: `race-${i}`, input: { n: i } });
    rt.clock.advance(24 * 3600_000); // every timeout is due now, at the instant the signals arrive

    const send = async (i: number): Promise<HttpResponse> => {
      for (let t = 0; t < i % 7; t++) await new Promise((r) => setImmediate(r)); // vary the interleaving
      const body = { payload: { approved: true, approver: `ana-${i}` }, signalId: `race-signal-${i}`, ...(i % 2 ? { waitId: "approval" } : {}) };
      return handler(signed("POST", `/runs/race-${i}/signals/approval`, body, rt.clock.now()));
    };
    const [responses] = await Promise.all([Promise.all(Array.from({ length: RUNS }, (_, i) => send(i))), rt.settle()]);
    await rt.settle();

    const won = { signal: 0, timeout: 0 };
    for (let i = 0; i < RUNS; i++) {
      const runId = `race-${i}`;
      const targeted = i % 2 === 1;
      const res = responses[i] as HttpResponse;
      const history = await rt.history(runId);
      const resolutions = history.flatMap((e) => (e.record?.type === "resolution" ? [e.record] : []));
      expect(resolutions, runId).toHaveLength(1);
      const decided = resolutions[0];
      const run = await rt.get(runId);
      const signal = history.find((e) => e.record?.type === "signal");
      let again: number;
      if (decided?.via === "signal") {
        won.signal++;
        expect(decided.signalId).toBe(`race-signal-${i}`);
        expect({ status: res.status, body: parseBody(res) }).toEqual({ status: 202, body: { signalId: `race-signal-${i}`, status: "delivered", waitId: "approval" } });
        expect(run.result).toEqual({ outcome: "approved", by: `ana-${i}` });
        again = 202;
      } else if (!targeted && res.status === 202) {
        // By name, after the timeout had already decided: kept for a later wait of that name, never for this one.
        won.timeout++;
        expect(parseBody(res)).toEqual({ signalId: `race-signal-${i}`, status: "buffered" });
        expect(run.result).toEqual({ outcome: "timed-out" });
        expect(signal?.lateFor).toBeUndefined();
        again = 409; // now that the run has finished, a retry is told what decided the wait
      } else {
        won.timeout++;
        expect(res.status, runId).toBe(409);
        expect(parseBody(res).error).toMatchObject({ name: "WaitResolvedError", decision: { via: "timeout", at: decided?.at } });
        expect(run.result).toEqual({ outcome: "timed-out" });
        // Written before it lost: kept, marked late, for the audit. Refused before writing: absent.
        if (signal) expect(signal.lateFor).toBe("approval");
        again = 409;
      }
      // Asking again gets a clear answer and writes nothing new.
      const before = JSON.stringify(history);
      const retry = await send(i);
      expect(retry.status, runId).toBe(again);
      if (again === 409) expect(parseBody(retry).error).toMatchObject({ name: "WaitResolvedError", decision: { via: "timeout" } });
      expect(JSON.stringify(await rt.history(runId))).toBe(before);
    }
    expect(won.signal + won.timeout).toBe(RUNS);
    // Both parties win some: the race is really run, not decided by the order of the code.
    expect(won.signal).toBeGreaterThan(0);
    expect(won.timeout).toBeGreaterThan(0);
  });
});
