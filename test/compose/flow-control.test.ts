/**
 * Issue 11, item 5 (concurrency per key): at most `limit` runs of one key execute at once, across
 * a pool of invocations; the rest queue and start when a slot frees; a slot held by an
 * invocation that died comes free when its lease would have. Real SQLite journal; the measure is
 * the step bodies' own timelines.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { durable } from "waymark";
import { createLocalRuntime } from "waymark/local";
import { Gates } from "../support/gates.ts";
import { sqliteLab } from "../support/sqlite-lab.ts";

describe("durable({ concurrency: { key, limit } })", () => {
  it("200 runs for 5 keys with limit 2: never more than 2 running per key, all complete, queued ones start as slots free", async () => {
    const running = new Map<string, number>();
    const peak = new Map<string, number>();
    const sync = durable({ name: "sync", input: z.object({ customer: z.string(), n: z.number() }), concurrency: { key: (i) => i.customer, limit: 2 } }, async ({ customer, n }, step) =>
      step.run("work", async () => {
        const now = (running.get(customer) ?? 0) + 1;
        running.set(customer, now);
        peak.set(customer, Math.max(peak.get(customer) ?? 0, now));
        await new Promise((r) => setTimeout(r, 5 + (n % 4)));
        running.set(customer, (running.get(customer) ?? 1) - 1);
        return n;
      }),
    );
    let queued = 0;
    const rt = createLocalRuntime({ workflows: [sync], file: join(mkdtempSync(join(tmpdir(), "waymark-flow-")), "j.db"), concurrency: 8, onInvocation: (_id, r) => void (r.status === "queued" && queued++) });
    rt.start();
    try {
      const ids = Array.from({ length: 200 }, (_, n) => `s-${n}`);
      // Runs of one customer arrive together (40 in a row): without the limit, the pool of 8 would run 8 of one key at once.
      for (const [n, id] of ids.entries()) await rt.client.start(sync, { runId: id, input: { customer: `c${Math.floor(n / 40)}`, n } });
      for (const id of ids) expect((await rt.waitForRun(id, { timeoutMs: 120_000 })).status).toBe("completed");
      expect([...peak.values()].every((p) => p <= 2)).toBe(true);
      expect([...peak.values()]).toContain(2); // the limit was reached, not just respected
      expect(queued).toBeGreaterThan(0); // and runs did wait for it
    } finally {
      await rt.close();
    }
  });

  it("a slot held by an invocation that died is recovered when its lease would have expired", async () => {
    const gates = new Gates();
    const wf = durable({ name: "one-at-a-time", input: z.object({ id: z.string() }), concurrency: { key: () => "k", limit: 1 } }, async ({ id }, step) => step.run("work", () => (id === "dies" ? gates.wait("dies") : id)));
    const lab = sqliteLab([wf]);
    try {
      await lab.client().start(wf, { runId: "dies", input: { id: "dies" } });
      await lab.client().start(wf, { runId: "next", input: { id: "next" } });
      void lab.engine("A").invoke("dies"); // holds the slot, then "dies" (never returns)
      await gates.started("dies");
      expect(await lab.engine("B").invoke("next")).toEqual({ status: "queued", scope: "one-at-a-time:k" });
      expect(await lab.store.getRun("next")).toMatchObject({ status: "queued", waitingFor: "queued:one-at-a-time:k" });
      lab.clock.advance(31_000); // A's lease (and slot) expired
      expect(await lab.engine("C").invoke("next")).toEqual({ status: "completed", result: "next" });
    } finally {
      lab.close();
    }
  });

  it("a run that frees its slot wakes the first queued run of its key", async () => {
    const gates = new Gates();
    const wf = durable({ name: "one-lane", input: z.object({ id: z.string() }), concurrency: { key: () => "lane", limit: 1 } }, async ({ id }, step) => step.run("work", () => (id === "first" ? gates.wait("first") : id)));
    const lab = sqliteLab([wf]);
    try {
      await lab.client().start(wf, { runId: "first", input: { id: "first" } });
      await lab.client().start(wf, { runId: "second", input: { id: "second" } });
      const first = lab.engine("A").invoke("first");
      await gates.started("first");
      expect((await lab.engine("B").invoke("second")).status).toBe("queued");
      const before = lab.scheduled.length;
      gates.open("first", 0, "done");
      expect(await first).toEqual({ status: "completed", result: "done" });
      expect(lab.scheduled.slice(before)).toContainEqual(expect.objectContaining({ runId: "second", key: "slot" }));
      expect(await lab.engine("B").invoke("second")).toEqual({ status: "completed", result: "second" });
    } finally {
      lab.close();
    }
  });

  it("first in, first out: a run that starts just as a slot frees queues behind the run already waiting", async () => {
    const gates = new Gates();
    const wf = durable({ name: "fifo", input: z.object({ id: z.string() }), concurrency: { key: () => "k", limit: 1 } }, async ({ id }, step) => step.run("work", () => (id === "a" ? gates.wait("a") : id)));
    const lab = sqliteLab([wf]);
    const started = async (id: string) => (await lab.client().history(id)).entries.flatMap((e) => (e.record?.type === "step" && e.record.kind === "run" ? [e.record.startedAt] : []))[0];
    try {
      await lab.client().start(wf, { runId: "a", input: { id: "a" } });
      const a = lab.engine("A").invoke("a"); // holds the only slot
      await gates.started("a");
      lab.clock.advance(1_000);
      await lab.client().start(wf, { runId: "b", input: { id: "b" } });
      expect((await lab.engine("B").invoke("b")).status).toBe("queued");
      expect(await lab.store.getRun("b")).toMatchObject({ status: "queued", waitingFor: "queued:fifo:k" });
      gates.open("a", 0, "a");
      expect((await a).status).toBe("completed"); // the slot frees: it is b's turn, and b is woken
      lab.clock.advance(1_000);
      // c starts right then, and its first invocation comes before b's wake is delivered.
      await lab.client().start(wf, { runId: "c", input: { id: "c" } });
      expect(await lab.engine("C").invoke("c")).toEqual({ status: "queued", scope: "fifo:k" });
      expect((await lab.client().list({ status: "queued" })).runs.map((r) => r.runId)).toEqual(["c", "b"]); // b is handed the slot, and queued until it comes
      lab.clock.advance(1_000);
      expect(await lab.engine("B").invoke("b")).toEqual({ status: "completed", result: "b" });
      lab.clock.advance(1_000);
      expect(await lab.engine("C").invoke("c")).toEqual({ status: "completed", result: "c" });
      // The measure: when each run's step began, by its own journal.
      const order = (await Promise.all(["a", "b", "c"].map(async (id) => [id, await started(id)] as const))).sort((x, y) => (x[1] ?? 0) - (y[1] ?? 0));
      expect(order.map(([id]) => id)).toEqual(["a", "b", "c"]);
    } finally {
      lab.close();
    }
  });

  it("a run that queues again while a slot is handed on is not lost from the queue (its enqueue found its old entry)", async () => {
    const { leave, promote } = await import("../../lib/core/run/flow.ts");
    const wf = durable({ name: "requeue", input: z.object({}), concurrency: { key: () => "k", limit: 1 } }, async () => "ok");
    const lab = sqliteLab([wf]);
    try {
      const scope = "requeue:k";
      const now = lab.clock.now();
      await lab.client().start(wf, { runId: "r", input: {} });
      expect(await lab.store.takeSlot(scope, 1, { runId: "holder", expiresAt: now + 60_000 }, now)).toBe(true);
      // Queued by an earlier invocation of r: released as queued, then enqueued.
      const earlier = await lab.store.acquireLease("r", { owner: "earlier", now, ttlMs: 30_000 });
      if (!earlier.acquired) throw new Error("no lease");
      await lab.store.releaseLease("r", earlier.lease.token, { now, wakeAt: now + 30_000, waitingFor: `queued:${scope}`, status: "queued" });
      await lab.store.enqueue(scope, "r", now);
      // Another invocation of r (a duplicate wake) holds its lease, about to queue again …
      const grant = await lab.store.acquireLease("r", { owner: "dup", now, ttlMs: 30_000 });
      if (!grant.acquired) throw new Error("no lease");
      const ports = { store: lab.store, wakes: lab.wakes, clock: lab.clock };
      // … while another run hands slots on: it reads r as running, and before it goes on, r queues
      // again as admission does (released, enqueued: already there, no slot free).
      const racing = new Proxy(lab.store, {
        get(target, prop, receiver) {
          if (prop !== "getRun") return Reflect.get(target, prop, receiver) as unknown;
          return async (runId: string) => {
            const seen = await target.getRun(runId);
            await target.releaseLease("r", grant.lease.token, { now, wakeAt: now + 30_000, waitingFor: `queued:${scope}`, status: "queued" });
            await target.enqueue(scope, "r", now);
            await promote(ports, scope, 1);
            return seen;
          };
        },
      });
      await promote({ ...ports, store: racing }, scope, 1);
      expect(await lab.store.peek(scope)).toEqual({ runId: "r", at: now }); // still in line
      await leave(ports, { scope, limit: 1 }, "holder");
      expect(lab.scheduled).toContainEqual(expect.objectContaining({ runId: "r", key: "slot" }));
      expect(await lab.engine("E").invoke("r")).toEqual({ status: "completed", result: "ok" });
    } finally {
      lab.close();
    }
  });

  it("on the testing runtime: a waiting run is `queued` and listed so; a signal waits with it; a cancel ends it at once, out of the queue", async () => {
    const { createTestRuntime } = await import("waymark/testing");
    const gates = new Gates();
    const began: string[] = [];
    const wf = durable({ name: "lane", input: z.object({ id: z.string() }), signals: { note: z.string() }, concurrency: { key: () => "k", limit: 1 } }, async ({ id }, step) => {
      await step.run("work", () => (began.push(id), id === "a" ? gates.wait("a") : id));
      if (id !== "b") return id;
      const note = await step.waitForSignal("note");
      return note.received ? note.payload : "none";
    });
    const rt = createTestRuntime({ workflows: [wf] });
    const a = rt.start(wf, { runId: "a", input: { id: "a" } });
    await gates.started("a");
    for (const id of ["b", "c", "d"]) await rt.start(wf, { runId: id, input: { id } });
    for (const id of ["b", "c", "d"]) expect(await rt.get(id)).toMatchObject({ status: "queued", waitingFor: "queued:lane:k" });
    expect((await rt.client.list({ status: "queued" })).runs.map((r) => r.runId)).toEqual(["d", "c", "b"]);
    expect((await rt.client.list({ status: "suspended" })).runs).toEqual([]);
    expect((await rt.signal("b", "note", "hello")).status).toBe("buffered");
    expect(await rt.get("b")).toMatchObject({ status: "queued" });
    expect((await rt.client.cancel("c", { reason: "not needed" })).outcome).toBe("cancelled");
    expect(await rt.get("c")).toMatchObject({ status: "cancelled", error: { fields: { reason: "not needed" } } }); // at once
    gates.open("a", 0);
    await a;
    await rt.advance("1s");
    expect(await rt.get("b")).toMatchObject({ status: "completed", result: "hello" });
    expect(await rt.get("d")).toMatchObject({ status: "completed", result: "d" });
    expect(began).toEqual(["a", "b", "d"]); // in order; the cancelled run was passed over, and ran nothing
    await rt.advance("1m"); // its old recheck wake finds it finished
    expect(await rt.get("c")).toMatchObject({ status: "cancelled" });
  });

  it("a queued child run cancelled on its own ends cancelled, and its parent hears of it", async () => {
    const { createTestRuntime } = await import("waymark/testing");
    const gates = new Gates();
    const lane = durable({ name: "lane-child", input: z.object({ id: z.string() }), concurrency: { key: () => "k", limit: 1 } }, async ({ id }, step) =>
      step.run("work", () => (id === "hold" ? gates.wait("hold") : id)),
    );
    const parent = durable({ name: "lane-parent", input: z.object({}) }, async (_in, step) => {
      try {
        return await step.invoke("child", lane, { input: { id: "c" } });
      } catch (err) {
        return `child ended: ${(err as Error).name}`;
      }
    });
    const rt = createTestRuntime({ workflows: [lane, parent] });
    const holding = rt.start(lane, { runId: "hold", input: { id: "hold" } });
    await gates.started("hold");
    await rt.start(parent, { runId: "p", input: {} });
    expect(await rt.get("p:child")).toMatchObject({ status: "queued" });
    expect((await rt.client.cancel("p:child", { reason: "not needed" })).outcome).toBe("requested");
    await rt.settle();
    expect(await rt.get("p:child")).toMatchObject({ status: "cancelled", error: { fields: { reason: "not needed" } } });
    expect(await rt.get("p")).toMatchObject({ status: "completed", result: expect.stringMatching(/^child ended: /) });
    gates.open("hold", 0);
    await holding;
  });

  it("a run queued by the previous version (suspended, waitingFor queued:…) is handed the freed slot and runs", async () => {
    const gates = new Gates();
    const wf = durable({ name: "old-lane", input: z.object({ id: z.string() }), concurrency: { key: () => "k", limit: 1 } }, async ({ id }, step) => step.run("work", () => (id === "holder" ? gates.wait("holder") : id)));
    const lab = sqliteLab([wf]);
    try {
      await lab.client().start(wf, { runId: "holder", input: { id: "holder" } });
      await lab.client().start(wf, { runId: "old", input: { id: "old" } });
      const holder = lab.engine("A").invoke("holder");
      await gates.started("holder");
      // "old" as the previous version left it: released as suspended, and in the queue.
      const now = lab.clock.now();
      const grant = await lab.store.acquireLease("old", { owner: "v0", now, ttlMs: 30_000 });
      if (!grant.acquired) throw new Error("no lease");
      await lab.store.releaseLease("old", grant.lease.token, { now, wakeAt: now + 30_000, waitingFor: "queued:old-lane:k" });
      await lab.store.enqueue("old-lane:k", "old", grant.run.createdAt);
      expect(await lab.store.getRun("old")).toMatchObject({ status: "suspended", waitingFor: "queued:old-lane:k" });
      gates.open("holder", 0, "done");
      expect((await holder).status).toBe("completed");
      expect(lab.scheduled).toContainEqual(expect.objectContaining({ runId: "old", key: "slot" }));
      expect((await lab.store.getRun("old"))?.wakeAt).toBe(lab.clock.now()); // due now, should that wake be lost
      await lab.client().start(wf, { runId: "new", input: { id: "new" } });
      expect((await lab.engine("C").invoke("new")).status).toBe("queued"); // the slot is old's
      expect(await lab.engine("B").invoke("old")).toEqual({ status: "completed", result: "old" });
    } finally {
      lab.close();
    }
  });
});

describe("durable({ rateLimit: { key, limit, period } })", () => {
  it("delays starts beyond the rate to later windows (a sliding window per key)", async () => {
    const { createTestRuntime } = await import("waymark/testing");
    const ran: Array<[string, number]> = [];
    const notify = durable({ name: "notify", input: z.object({ user: z.string() }), rateLimit: { key: (i) => i.user, limit: 2, period: "1m" } }, async (_in, step) =>
      step.run("send", () => void ran.push([step.runId, rt.clock.now() - t0])),
    );
    const rt = createTestRuntime({ workflows: [notify] });
    const t0 = rt.clock.now();
    for (const id of ["n1", "n2", "n3", "n4", "n5"]) await rt.start(notify, { runId: id, input: { user: "ana" } });
    await rt.start(notify, { runId: "other", input: { user: "ben" } }); // another key is not held back
    expect(ran.map(([id]) => id).sort()).toEqual(["n1", "n2", "other"]);
    expect(await rt.get("n3")).toMatchObject({ status: "queued", waitingFor: "rate-limited:rate:notify:ana" });
    expect((await rt.client.list({ status: "queued" })).runs.map((r) => r.runId).sort()).toEqual(["n3", "n4", "n5"]);
    await rt.advance("1m");
    expect(ran.filter(([, at]) => at >= 60_000 && at < 120_000)).toHaveLength(2);
    await rt.advance("1m");
    expect(ran.map(([id]) => id).sort()).toEqual(["n1", "n2", "n3", "n4", "n5", "other"]);
    // Never more than 2 starts of one key within any minute.
    const ana = ran.filter(([id]) => id !== "other").map(([, at]) => at).sort((a, b) => a - b);
    for (let i = 2; i < ana.length; i++) expect((ana[i] ?? 0) - (ana[i - 2] ?? 0)).toBeGreaterThanOrEqual(60_000);
  });

  it("onLimit: reject — client.start refuses with RateLimitedError and writes nothing", async () => {
    const { createTestRuntime } = await import("waymark/testing");
    const { RateLimitedError } = await import("waymark");
    const strict = durable({ name: "strict", input: z.object({ user: z.string() }), rateLimit: { key: (i) => i.user, limit: 1, period: "10s", onLimit: "reject" } }, async () => "ok");
    const rt = createTestRuntime({ workflows: [strict] });
    await rt.start(strict, { runId: "a1", input: { user: "ana" } });
    expect((await rt.client.start(strict, { runId: "a1", input: { user: "ana" } })).created).toBe(false); // a retried start keeps its count
    await expect(rt.client.start(strict, { runId: "a2", input: { user: "ana" } })).rejects.toBeInstanceOf(RateLimitedError);
    await expect(rt.get("a2")).rejects.toMatchObject({ name: "RunNotFoundError" });
    await rt.advance("10s");
    await rt.start(strict, { runId: "a2", input: { user: "ana" } });
    expect((await rt.get("a2")).status).toBe("completed");
  });
});

describe("durable({ debounce: { key, period } })", () => {
  it("the last start of a key within the period wins; earlier ones end cancelled, having run nothing", async () => {
    const { createTestRuntime } = await import("waymark/testing");
    const ran: string[] = [];
    const reindex = durable({ name: "reindex", input: z.object({ doc: z.string(), v: z.number() }), debounce: { key: (i) => i.doc, period: "30s" } }, async ({ v }, step) =>
      step.run("index", () => (ran.push(`${step.runId}@${v}`), v)),
    );
    const rt = createTestRuntime({ workflows: [reindex] });
    await rt.start(reindex, { runId: "d1", input: { doc: "a", v: 1 } });
    await rt.advance("10s");
    await rt.start(reindex, { runId: "d2", input: { doc: "a", v: 2 } });
    await rt.start(reindex, { runId: "e1", input: { doc: "b", v: 9 } }); // another key
    expect(ran).toEqual([]);
    await rt.advance("20s"); // d1's period is over, but d2 came after it
    expect(await rt.get("d1")).toMatchObject({ status: "cancelled", error: { fields: { reason: "superseded by d2" } } });
    expect(ran).toEqual([]);
    await rt.advance("10s");
    expect(await rt.get("d2")).toMatchObject({ status: "completed", result: 2 });
    expect(await rt.get("e1")).toMatchObject({ status: "completed", result: 9 });
    expect(ran.sort()).toEqual(["d2@2", "e1@9"]);
  });
});
