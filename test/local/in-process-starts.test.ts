/**
 * Starts delivered in-process (lib/wake-loop.ts, `InProcessStarts`): a run started on a local
 * runtime with a slot free is invoked at once and writes no wake row (no schedule, claim or
 * ack); with every slot taken the start goes to the wake table as before; and a start whose
 * invocation fails before it takes the run's lease — no wake to reappear — is found by the
 * failover's scan for stranded runs and finished.
 */
import { join } from "node:path";
import BetterSqlite3 from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { durable } from "waymark";
import { createLocalRuntime, type LocalRuntime } from "waymark/local";
import type { LogEntry } from "../../lib/core/engine.ts";
import { tempDir } from "../http/helpers.ts";
import { until } from "../support/until.ts";

/** Bodies held until released, by run id. */
const gates = new Map<string, () => void>();
let inBody = 0;
let mostInBody = 0;
const gated = durable({ name: "gated", input: z.object({ id: z.string() }) }, async ({ id }, step) => {
  return step.run("held", async () => {
    inBody++;
    mostInBody = Math.max(mostInBody, inBody);
    await new Promise<void>((resolve) => gates.set(id, resolve));
    inBody--;
    return id;
  });
});
const quick = durable({ name: "quick", input: z.object({}) }, async (_in, step) => step.run("only", () => "done"));

let rt: LocalRuntime | undefined;
afterEach(async () => {
  for (const release of gates.values()) release();
  gates.clear();
  await rt?.close();
  rt = undefined;
});

function wakeRows(file: string): Array<{ run_id: string; key: string }> {
  const db = new BetterSqlite3(file, { readonly: true });
  try {
    return db.prepare<[], { run_id: string; key: string }>("SELECT run_id, key FROM wakes ORDER BY run_id, key").all();
  } finally {
    db.close();
  }
}

describe("starts delivered in-process", () => {
  it("a start with a slot free is invoked at once with no wake row; with the slots full it waits in the wake table", async () => {
    const file = join(tempDir("in-process-"), "journal.db");
    rt = createLocalRuntime({ workflows: [gated], file, concurrency: 2, tracing: false });
    await rt.start();
    inBody = mostInBody = 0;
    for (const runId of ["a", "b"]) {
      await rt.client.start(gated, { runId, input: { id: runId } });
      await until(`run ${runId} in its body`, () => gates.has(runId));
    }
    // Both invoked without a wake: nothing was written to the wake table for them.
    expect(wakeRows(file)).toEqual([]);
    await rt.client.start(gated, { runId: "c", input: { id: "c" } });
    expect(wakeRows(file)).toEqual([{ run_id: "c", key: "start" }]);
    expect(gates.has("c")).toBe(false);

    gates.get("a")?.();
    await until("run c in its body, taken from the wake table once a slot came free", () => gates.has("c"));
    gates.get("b")?.();
    gates.get("c")?.();
    for (const runId of ["a", "b", "c"]) expect((await rt.waitForRun(runId)).status).toBe("completed");
    expect(mostInBody).toBe(2);
    // A run is completed before its wake is acked (the pool acks once the invocation returned).
    await until("c's wake acked", () => wakeRows(file).length === 0);
  });

  it("a start whose invocation fails before taking the lease is found stranded by the failover and finished", async () => {
    const file = join(tempDir("in-process-"), "journal.db");
    const log: LogEntry[] = [];
    rt = createLocalRuntime({ workflows: [quick], file, tracing: false, watchdogIntervalMs: 200, log: (e) => log.push(e) });
    await rt.start();
    // The lease write fails once, unapplied (a disk error, say): the in-process invocation throws.
    const acquire = rt.store.acquireLease.bind(rt.store);
    let failed = 0;
    rt.store.acquireLease = (runId, ...rest) => {
      if (runId === "lost" && failed++ === 0) return Promise.reject(new Error("disk I/O error (injected)"));
      return acquire(runId, ...rest);
    };
    await rt.client.start(quick, { runId: "lost", input: {} });
    const run = await rt.waitForRun("lost", { timeoutMs: 30_000 });
    expect(run.status).toBe("completed");
    expect(failed).toBe(2);
    expect(log.some((e) => e.event === "invocation-error" && e.runId === "lost")).toBe(true);
    expect(log.find((e) => e.event === "recover" && e.runId === "lost")).toMatchObject({ cause: "stranded", status: "pending" });
  });
});
