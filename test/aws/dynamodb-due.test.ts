/**
 * Marking a run due on DynamoDB (lib/aws/dynamodb-due.ts) when other writers keep changing its
 * meta item between the refusal and the next try. Each conditional write is answered by a stand-in
 * for the one `UpdateItem` it would send (the refusal carries the item, as ReturnValuesOnCondition
 * CheckFailure does), so any number of interleaved writers can be played out exactly; the
 * updates themselves run against DynamoDB Local in test/aws/dynamodb-store.test.ts.
 */
import { describe, expect, it } from "vitest";
import { ContendedWriteError } from "../../lib/aws/errors.ts";
import { markDue, releaseMarked } from "../../lib/aws/dynamodb-due.ts";
import type { Applied } from "../../lib/core/journal-base.ts";
import type { RunMeta } from "../../lib/ports.ts";

const T = 1_700_000_000_000;
const base: RunMeta = { runId: "r", workflow: "w", input: {}, status: "suspended", createdAt: T, updatedAt: T, leaseToken: 1, invocations: 1 };
/** A run another invocation has just leased (token n): each try finds a newer lease than the last. */
const leasedBy = (token: number): RunMeta => ({ ...base, status: "running", leaseToken: token, lease: { owner: `o${token}`, token, expiresAt: T + 60_000 }, wakeAt: T + 60_000 });

describe("markDue on DynamoDB under contention", () => {
  it("fails with ContendedWriteError when every try meets another writer's change, instead of returning as if marked", async () => {
    let token = 1;
    const apply = async (): Promise<Applied> => ({ applied: false, run: leasedBy(++token) });
    const err = await markDue(apply, "r", T).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ContendedWriteError);
    expect(err).toMatchObject({ name: "ContendedWriteError", runId: "r", retryable: true });
    expect(token).toBe(6); // the first write and four more tries, each refused
  });

  it("returns once a try applies, or once the item it was refused by needs no mark, naming the transition", async () => {
    let calls = 0;
    const appliesThird = async (): Promise<Applied> => (++calls < 3 ? { applied: false, run: leasedBy(calls + 1) } : { applied: true });
    await expect(markDue(appliesThird, "r", T)).resolves.toBe("on-release");
    expect(calls).toBe(3);
    const alreadyDue = async (): Promise<Applied> => ({ applied: false, run: { ...base, wakeAt: T - 1 } });
    await expect(markDue(alreadyDue, "r", T)).resolves.toBe("none");
    const finished = async (): Promise<Applied> => ({ applied: false, run: { ...base, status: "completed" } });
    await expect(markDue(finished, "r", T)).resolves.toBe("none");
    // Read leased, released since: the try on release is refused by a suspended run, then due.
    let tries = 0;
    const releasedMeanwhile = async (): Promise<Applied> => (++tries === 1 ? { applied: false, run: { ...base, status: "suspended" } } : { applied: true });
    await expect(markDue(releasedMeanwhile, "r", T, { token: 1 })).resolves.toBe("due");
    await expect(markDue(async () => ({ applied: true }), "r", T)).resolves.toBe("due");
  });
});

describe("the release on DynamoDB answers the wake time it wrote, from its own condition", () => {
  const held = (dueOnRelease?: number): RunMeta => ({ ...leasedBy(1), ...(dueOnRelease === undefined ? {} : { dueOnRelease }) });

  it("unmarked: the release's own; marked while held: the mark the applied try was conditioned on, if earlier; refused: the run as it was", async () => {
    const update = { now: T + 1, wakeAt: T + 20_000, waitingFor: "sleep:nap" };
    await expect(releaseMarked(async () => ({ applied: true }), "r", 1, update)).resolves.toEqual({ applied: true, wakeAt: T + 20_000 });
    // Refused by a mark, then by a second (earlier) mark, then applied: one request each, no read.
    const marks = [T + 9, T + 5];
    let calls = 0;
    const marked = async (): Promise<Applied> => {
      const mark = marks[calls++];
      return mark === undefined ? { applied: true } : { applied: false, run: held(mark) };
    };
    await expect(releaseMarked(marked, "r", 1, update)).resolves.toEqual({ applied: true, wakeAt: T + 5 });
    expect(calls).toBe(3);
    // A mark later than the release's own wake time: the release's.
    let once = true;
    const late = async (): Promise<Applied> => (once ? ((once = false), { applied: false, run: held(T + 50_000) }) : { applied: true });
    await expect(releaseMarked(late, "r", 1, update)).resolves.toEqual({ applied: true, wakeAt: T + 20_000 });
    // A wait with no wake time of its own: the mark, or nothing.
    let first = true;
    const waitMarked = async (): Promise<Applied> => (first ? ((first = false), { applied: false, run: held(T + 3) }) : { applied: true });
    await expect(releaseMarked(waitMarked, "r", 1, { now: T + 1, waitingFor: "signal:go" })).resolves.toEqual({ applied: true, wakeAt: T + 3 });
    await expect(releaseMarked(async () => ({ applied: true }), "r", 1, { now: T + 1, waitingFor: "signal:go" })).resolves.toStrictEqual({ applied: true });
    // The lease is gone: refused, with the run for the base class to judge (a retry of its own release, or not).
    const taken = leasedBy(2);
    await expect(releaseMarked(async () => ({ applied: false, run: taken }), "r", 1, update)).resolves.toEqual({ applied: false, run: taken });
  });
});
