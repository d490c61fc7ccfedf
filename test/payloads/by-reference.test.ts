/**
 * Issue 10, item 4: values over the inline threshold go to the payload store; the journal keeps a
 * reference and a hash. On the test runtime's memory store: every kind of value (step result, run
 * input, signal payload, run result), lazy reads on replay, the hard cap, integrity and missing
 * objects, a retried put after a lost response, and a run id reused after retention.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { durable, StepFailedError } from "waymark";
import { createTestRuntime, MemoryPayloadStore } from "waymark/testing";
import type { RunStepRecord, SignalRecord } from "../../lib/core/records.ts";
import { Empty } from "../core/helpers.ts";

const KiB = 1024;
const big = (n: number, c = "x") => c.repeat(n);

const report = durable({ name: "report", input: Empty }, async (_in, step) => {
  const text = await step.run("render", () => big(200 * KiB));
  await step.sleep("cool", "1h");
  return { length: text.length, head: text.slice(0, 3) };
});

describe("a step result over the inline threshold", () => {
  it("is stored once by reference: the journal holds key, hash and size, not the value; replay reads it back", async () => {
    const rt = createTestRuntime({ workflows: [report], payloads: true });
    await rt.start(report, { runId: "r-1", input: {} });
    const store = rt.payloads as MemoryPayloadStore;
    const rec = (await rt.history("r-1")).find((e) => e.key === "step#render")?.record as RunStepRecord;
    expect(rec.result).toBeUndefined();
    expect(rec.resultRef).toMatchObject({ bytes: 200 * KiB + 2, sha256: expect.stringMatching(/^[0-9a-f]{64}$/) });
    const run = await rt.get("r-1");
    expect(rec.resultRef?.key).toBe(`runs/r-1/${run.createdAt}/${rec.resultRef?.sha256}`);
    expect(store.objects.size).toBe(1);
    expect(store.gets).toBe(0); // the live path hands over the value it has
    await rt.advance("1h");
    expect(store.gets).toBe(1); // the replay read it back
    expect((await rt.get("r-1")).result).toEqual({ length: 200 * KiB, head: "xxx" });
  });

  it("a small result stays inline; without a payload store today's limit stands", async () => {
    const small = durable({ name: "small", input: Empty }, async (_in, step) => step.run("s", () => "ok"));
    const rt = createTestRuntime({ workflows: [small, report], payloads: true });
    await rt.start(small, { runId: "s-1", input: {} });
    expect((await rt.history("s-1")).find((e) => e.key === "step#s")?.record).toMatchObject({ result: "ok" });
    expect((rt.payloads as MemoryPayloadStore).objects.size).toBe(0);
    const plain = createTestRuntime({ workflows: [report] });
    await plain.start(report, { runId: "r-2", input: {} });
    await plain.advance("1h");
    // 200 KiB is under the 256 KiB journal limit: inline, as before.
    expect((await plain.history("r-2")).find((e) => e.key === "step#render")?.record).toMatchObject({ result: expect.any(String) });
  });

  it("replay reads a result only when the code awaits it", async () => {
    const lazyFlow = durable({ name: "lazy", input: Empty }, async (_in, step) => {
      const blob = step.run("blob", () => big(100 * KiB));
      const needed = await step.run("needed", () => false);
      await step.sleep("pause", "1m");
      return needed ? (await blob).length : "skipped";
    });
    const rt = createTestRuntime({ workflows: [lazyFlow], payloads: true });
    await rt.start(lazyFlow, { runId: "l-1", input: {} });
    await rt.advance("1m");
    expect((await rt.get("l-1")).result).toBe("skipped");
    const store = rt.payloads as MemoryPayloadStore;
    expect(store.puts).toBe(1);
    expect(store.gets).toBe(0); // the replay never read the blob nobody awaited
  });

  it("over the hard cap the step fails once with a non-retryable ValueTooLargeError naming the cap", async () => {
    let calls = 0;
    const huge = durable({ name: "huge", input: Empty, retries: 5 }, async (_in, step) => {
      try {
        await step.run("dump", () => {
          calls++;
          return big(64 * KiB);
        });
        return "ok";
      } catch (err) {
        return err instanceof StepFailedError ? `${err.failure.name}: ${err.failure.message}` : "other";
      }
    });
    const rt = createTestRuntime({ workflows: [huge], payloads: { inlineBytes: 8 * KiB, maxBytes: 32 * KiB } });
    await rt.start(huge, { runId: "h-1", input: {} });
    const run = await rt.get("h-1");
    expect(run.result).toMatch(/^ValueTooLargeError: .*over the cap of 32768 bytes for payloads stored by reference/);
    expect(calls).toBe(1);
    expect((rt.payloads as MemoryPayloadStore).puts).toBe(0);
  });
});

describe("inputs, signal payloads and run results", () => {
  const ingest = durable(
    { name: "ingest", input: z.object({ doc: z.string() }), signals: { patch: z.object({ text: z.string() }) } },
    async ({ doc }, step) => {
      const got = await step.waitForSignal("patch");
      if (!got.received) return "none";
      return big(doc.length + got.payload.text.length, "r");
    },
  );

  it("go by reference and read back: the meta record and the signal record hold references", async () => {
    const rt = createTestRuntime({ workflows: [ingest], payloads: { inlineBytes: 16 * KiB } });
    await rt.start(ingest, { runId: "i-1", input: { doc: big(40 * KiB, "d") } });
    const meta = await rt.store.getRun("i-1");
    expect(meta?.input).toEqual({ $waymarkPayload: expect.objectContaining({ bytes: 40 * KiB + 10 }) });
    await rt.signal("i-1", "patch", { text: big(30 * KiB, "p") }, { signalId: "sig-1" });
    const sig = (await rt.history("i-1")).find((e) => e.key === "signal#sig-1")?.record as SignalRecord;
    expect(sig.payload).toBeUndefined();
    expect(sig.payloadRef?.bytes).toBe(30 * KiB + 11);
    const stored = await rt.store.getRun("i-1");
    expect(stored?.status).toBe("completed");
    expect(stored?.result).toEqual({ $waymarkPayload: expect.objectContaining({ bytes: 70 * KiB + 2 }) });
    // The client reads references back.
    const run = await rt.get("i-1");
    expect(run.input).toEqual({ doc: big(40 * KiB, "d") });
    expect(run.result).toBe(big(70 * KiB, "r"));
  });

  it("a retried start or signal with the same large value is the same call, another value a conflict", async () => {
    const rt = createTestRuntime({ workflows: [ingest], payloads: { inlineBytes: 16 * KiB } });
    const input = { doc: big(40 * KiB, "d") };
    await rt.start(ingest, { runId: "i-2", input });
    expect((await rt.client.start(ingest, { runId: "i-2", input: { doc: big(40 * KiB, "d") } })).created).toBe(false);
    await expect(rt.client.start(ingest, { runId: "i-2", input: { doc: big(40 * KiB, "e") } })).rejects.toMatchObject({ name: "RunConflictError" });
    await rt.client.signal("i-2", "patch", { text: big(20 * KiB) }, { signalId: "s" });
    expect(await rt.client.signal("i-2", "patch", { text: big(20 * KiB) }, { signalId: "s" })).toMatchObject({ status: "delivered" });
    await expect(rt.client.signal("i-2", "patch", { text: big(20 * KiB, "y") }, { signalId: "s" })).rejects.toMatchObject({ name: "SignalConflictError" });
  });

  it("an input over the cap is refused before anything is written", async () => {
    const rt = createTestRuntime({ workflows: [ingest], payloads: { inlineBytes: 16 * KiB, maxBytes: 64 * KiB } });
    await expect(rt.start(ingest, { runId: "i-3", input: { doc: big(100 * KiB) } })).rejects.toMatchObject({ name: "InvalidInputError" });
    expect(await rt.store.getRun("i-3")).toBeUndefined();
    expect((rt.payloads as MemoryPayloadStore).objects.size).toBe(0);
  });
});

describe("faults", () => {
  it("an object altered in the store fails the run with PayloadIntegrityError, never hands user code other bytes", async () => {
    const rt = createTestRuntime({ workflows: [report], payloads: true });
    await rt.start(report, { runId: "t-1", input: {} });
    const store = rt.payloads as MemoryPayloadStore;
    const [key] = [...store.objects.keys()];
    store.objects.set(key ?? "", new TextEncoder().encode(JSON.stringify(big(200 * KiB, "z"))));
    await rt.advance("1h");
    expect(await rt.get("t-1")).toMatchObject({ status: "failed", error: { name: "PayloadIntegrityError" } });
  });

  it("an object that is gone fails the run with PayloadMissingError", async () => {
    const rt = createTestRuntime({ workflows: [report], payloads: true });
    await rt.start(report, { runId: "m-1", input: {} });
    (rt.payloads as MemoryPayloadStore).objects.clear();
    await rt.advance("1h");
    expect(await rt.get("m-1")).toMatchObject({ status: "failed", error: { name: "PayloadMissingError" } });
  });

  it("a put whose response was lost is retried with the wake and stores the object once", async () => {
    class LosesFirstAnswer extends MemoryPayloadStore {
      lost = 0;
      override async put(key: string, body: Uint8Array): Promise<void> {
        await super.put(key, body);
        if (this.lost++ === 0) throw Object.assign(new Error("socket hang up"), { name: "TimeoutError" });
      }
    }
    let runs = 0;
    const flow = durable({ name: "retry-put", input: Empty }, async (_in, step) => (await step.run("make", () => (runs++, big(100 * KiB)))).length);
    const store = new LosesFirstAnswer();
    const rt = createTestRuntime({ workflows: [flow], payloads: { store } });
    await rt.client.start(flow, { runId: "p-1", input: {} });
    await expect(rt.settle()).rejects.toThrow("socket hang up"); // the invocation failed; nothing was journaled
    expect((await rt.history("p-1")).length).toBe(0);
    await rt.advance("2m"); // the claimed wake reappears (visibility timeout), as an SQS message does
    expect(await rt.get("p-1")).toMatchObject({ status: "completed", result: 100 * KiB });
    expect(store.objects.size).toBe(1);
    expect(runs).toBe(2); // at-least-once: the body ran again, as after a crash
  });

  it("a run id reused after retention never reads the old run's objects", async () => {
    const echo = durable({ name: "echo", input: z.object({ doc: z.string() }) }, async ({ doc }, step) => {
      await step.sleep("s", "1m");
      return doc.slice(0, 1);
    });
    const rt = createTestRuntime({ workflows: [echo], payloads: { inlineBytes: 1 * KiB } });
    await rt.start(echo, { runId: "again", input: { doc: big(4 * KiB, "a") } });
    await rt.advance("1m");
    const first = await rt.store.getRun("again");
    // Retention removes the journal; the objects may outlive it (S3 lifecycle runs later).
    const maps = rt.store as unknown as { runs: Map<string, unknown>; records: Map<string, unknown> };
    maps.runs.delete("again");
    maps.records.delete("again");
    await rt.advance("1m");
    await rt.start(echo, { runId: "again", input: { doc: big(4 * KiB, "b") } });
    await rt.advance("1m");
    const second = await rt.get("again");
    expect(second.result).toBe("b");
    expect(second.createdAt).not.toBe(first?.createdAt);
    const keys = [...(rt.payloads as MemoryPayloadStore).objects.keys()];
    expect(keys.filter((k) => k.startsWith(`runs/again/${second.createdAt}/`))).toHaveLength(1);
    expect(keys.filter((k) => k.startsWith(`runs/again/${first?.createdAt}/`))).toHaveLength(1);
  });
});
