/**
 * A link's signal that loses its wait to the timeout must not resolve the run's next wait of
 * the same name. The store below lets the engine run in the two gaps of a delivery: after the
 * client checked that the wait is open (the timeout decides it, the workflow reaches the next
 * wait), and after the signal is written (another invocation looks for signals to take).
 */
import { describe, expect, it } from "vitest";
import { Client, Engine, createRegistry } from "waymark";
import { MemoryJournalStore, MemoryWakeQueue, VirtualClock } from "waymark/testing";
import type { AppendResult, Journal, StoredRecord } from "../../lib/ports.ts";
import { createHttpHandler } from "../../lib/http/handler.ts";
import { createApprovalLinks } from "../../lib/http/tokens.ts";
import { SECRET, parseBody, postJson, sentLinks, twoApprovals } from "./helpers.ts";

/** Runs each hook once: `afterLoad` after the next journal load, `afterSignal` after the next signal record is written. */
class PausingStore extends MemoryJournalStore {
  afterLoad: (() => Promise<void>) | undefined;
  afterSignal: (() => Promise<void>) | undefined;
  override async loadJournal(runId: string): Promise<Journal | undefined> {
    const journal = await super.loadJournal(runId);
    const hook = this.afterLoad;
    this.afterLoad = undefined;
    await hook?.();
    return journal;
  }
  override async appendRecord(runId: string, record: StoredRecord): Promise<AppendResult> {
    const result = await super.appendRecord(runId, record);
    const hook = record.key.startsWith("signal#") ? this.afterSignal : undefined;
    if (hook) this.afterSignal = undefined;
    await hook?.();
    return result;
  }
}

describe("a link's signal that lost its wait to the timeout", () => {
  it("gets 409 and is never applied to the next wait of the same signal", async () => {
    const clock = new VirtualClock();
    const store = new PausingStore();
    const ports = { store, wakes: new MemoryWakeQueue(), clock, workflows: createRegistry([twoApprovals]) };
    const client = new Client(ports);
    const engine = new Engine({ ...ports, owner: "t", leaseTtlMs: 60_000, links: createApprovalLinks({ secret: SECRET }) });
    const handler = createHttpHandler({ client, secret: SECRET, clock });

    await client.start(twoApprovals, { runId: "s-1", input: {} });
    await engine.invoke("s-1");
    const first = sentLinks.get("s-1")?.[0];
    expect(first?.waitId).toBe("approval");
    clock.advance(3600_000 - 1); // the link is still valid…
    store.afterLoad = async () => {
      clock.advance(1); // …but once the client has seen the wait open, the timeout falls due,
      await engine.invoke("s-1"); // and the engine decides the wait and reaches the next one.
    };
    store.afterSignal = async () => {
      await engine.invoke("s-1"); // Another invocation runs while the late signal sits unmarked.
    };
    const res = await handler(postJson(`/approvals/${first?.token}`, { approved: true, approver: "too-late" }));
    expect({ status: res.status, body: parseBody(res).error }).toMatchObject({ status: 409, body: { name: "WaitResolvedError", decision: { via: "timeout" } } });

    const history = await client.history("s-1");
    const resolutions = history.entries.flatMap((e) => (e.record?.type === "resolution" ? [e.record] : []));
    expect(resolutions.map((r) => [r.stepId, r.via])).toEqual([["approval", "timeout"]]);
    expect(history.run).toMatchObject({ status: "suspended", waitingFor: "signal:approval" });
    expect(history.entries.find((e) => e.record?.type === "signal")?.lateFor).toBe("approval");
  });
});
