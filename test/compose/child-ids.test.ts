/**
 * A child's run id that a client already started: the parent's start is `RunConflictError`, and
 * the client's run is left as it was. It used to be adopted as the parent's child, but its
 * invocations may have read its journal before the parent's record was there (on DynamoDB the
 * first reads none at all when the start found the partition empty: `emptyJournal`), so it
 * could end without telling the parent, which then waited for ever. A run created by a parent's
 * start says so (`RunMeta.child`); the start refuses only a run that existed before its own
 * parent record and is not a child, so two attempts of one start (a zombie invocation beside its
 * successor, an answer lost) still share their child. On the testing runtime and a real SQLite file.
 */
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { durable, type JournalStore, StepFailedError } from "waymark";
import { createTestRuntime } from "waymark/testing";
import { childPort } from "../../lib/core/run/children.ts";
import { PausingStore } from "../support/pausing-store.ts";
import { type SqliteLab, sqliteLab } from "../support/sqlite-lab.ts";

const payment = durable({ name: "id-payment", input: z.object({ cents: z.number() }) }, async ({ cents }, step) => step.run("capture", () => `paid ${cents}`));
const parent = durable({ name: "id-parent", input: z.object({ childId: z.string() }) }, async ({ childId }, step) => {
  try {
    return { paid: await step.invoke("pay", payment, { input: { cents: 5 }, runId: childId }) };
  } catch (err) {
    // The start is a journaled step: its failure is the step's, with the start's error inside.
    if (err instanceof StepFailedError) return { refused: err.failure.name, message: err.failure.message, attempts: err.attempts };
    throw err;
  }
});

let lab: SqliteLab | undefined;
afterEach(() => {
  lab?.close();
  lab = undefined;
});

describe("a child run id a client already started", () => {
  it("is refused to the parent (RunConflictError, not retried); the client's run stays top-level and ends as it would", async () => {
    const rt = createTestRuntime({ workflows: [parent, payment] });
    await rt.client.start(payment, { runId: "taken-1", input: { cents: 5 } });
    await rt.start(parent, { runId: "p-1", input: { childId: "taken-1" } });
    await rt.settle();
    expect(await rt.get("p-1")).toMatchObject({ status: "completed", result: { refused: "RunConflictError", message: 'run "taken-1" already exists as a run a client started, not as a child', attempts: 1 } });
    const run = await rt.get("taken-1");
    expect(run).toMatchObject({ status: "completed", result: "paid 5" });
    expect(run).not.toHaveProperty("child");
  });

  it("on SQLite: the same, and a run a parent starts is marked a child in the file", async () => {
    lab = sqliteLab([parent, payment]);
    await lab.client().start(payment, { runId: "taken-2", input: { cents: 5 } });
    await lab.client().start(parent, { runId: "p-2", input: { childId: "taken-2" } });
    expect(await lab.engine("E").invoke("p-2")).toEqual({ status: "completed", result: expect.objectContaining({ refused: "RunConflictError" }) });
    expect(await lab.store.getRun("taken-2")).not.toHaveProperty("child");
    // The refused start's parent record stays in the run's journal (records are write-once): the
    // run ends as it would, and its end, sent to the parent that already went on, changes nothing.
    expect(await lab.engine("E").invoke("taken-2")).toEqual({ status: "completed", result: "paid 5" });
    expect(await lab.store.getRun("p-2")).toMatchObject({ status: "completed", result: { refused: "RunConflictError" } });

    await lab.client().start(parent, { runId: "p-3", input: { childId: "own-3" } });
    expect(await lab.engine("E").invoke("p-3")).toMatchObject({ status: "suspended", waitingFor: "signal:__child" });
    expect(await lab.store.getRun("own-3")).toMatchObject({ status: "pending", child: true });
    expect(await lab.engine("E").invoke("own-3")).toMatchObject({ status: "completed" });
    expect(await lab.engine("E").invoke("p-3")).toEqual({ status: "completed", result: { paid: "paid 5" } });
  });

  it("two attempts of one parent's start at once: the one whose record came first finds the other's child and takes it", async () => {
    const l = (lab = sqliteLab([parent, payment]));
    const ports = (store: JournalStore = l.store) => ({ store, wakes: l.wakes, clock: l.clock, workflows: l.workflows });
    const request = { workflow: "id-payment", runId: "shared-4", input: { cents: 5 }, parent: { runId: "p-4", waitId: "pay" } };
    // A (a zombie invocation) writes the parent record, then stalls before creating the run.
    const pausing = new PausingStore(l.store);
    const held = pausing.hold("createRun", "before");
    const zombie = childPort(ports(pausing.store), 1).start(request);
    await held.reached;
    // B (its successor) finds A's record, which names the same parent, and creates the child.
    l.clock.advance(10);
    expect(await childPort(ports(), 1).start(request)).toBe("shared-4");
    expect(await l.store.getRun("shared-4")).toMatchObject({ child: true });
    // A goes on: the run existed before A's create, but as this parent's child.
    held.release();
    expect(await zombie).toBe("shared-4");
  });
});
