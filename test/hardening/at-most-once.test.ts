/**
 * Issue 8, item 9: a body interrupted by a crash. At-most-once steps journal a start marker
 * before the body and never run a started, unfinished body again (StepInterruptedError into the
 * workflow); at-least-once steps run it again with the same key and say how many invocations
 * may have run it before (`possibleReruns`), instead of claiming a single attempt.
 * The crash here is an invocation that never returns (its process "died") and whose lease
 * expires; test/crash/at-most-once.test.ts does the same with SIGKILL of a real process.
 */
import { afterEach, describe, expect, it } from "vitest";
import { durable, StepInterruptedError } from "waymark";
import { Gates } from "../support/gates.ts";
import { type SqliteLab, sqliteLab } from "../support/sqlite-lab.ts";
import { Counter, Empty } from "../core/helpers.ts";

let lab: SqliteLab;
afterEach(() => lab?.close());

describe("at-most-once", () => {
  it("a started, unfinished body is not run again: the workflow gets StepInterruptedError and reconciles", async () => {
    const gates = new Gates();
    const sms = new Counter();
    const flow = durable({ name: "sms", input: Empty }, async (_in, step) => {
      try {
        await step.run("send", async () => {
          sms.hit("send");
          await gates.wait("send");
          return "sent";
        }, { semantics: "at-most-once" });
        return "sent";
      } catch (err) {
        if (!(err instanceof StepInterruptedError)) throw err;
        return step.run("reconcile", () => `interrupted after ${err.attempts} attempt(s)`);
      }
    });
    lab = sqliteLab([flow]);
    await lab.client().start(flow, { runId: "m1", input: {} });
    void lab.engine("A").invoke("m1"); // dies inside the body
    await gates.started("send");
    lab.clock.advance(31_000);
    expect(await lab.engine("B").invoke("m1")).toEqual({ status: "completed", result: "interrupted after 1 attempt(s)" });
    expect(sms.count("send")).toBe(1);
    const keys = (await lab.client().history("m1")).entries.map((e) => e.key);
    expect(keys.sort()).toEqual(["start#send#1", "step#reconcile", "step#send"]);
    const send = (await lab.client().history("m1")).entries.find((e) => e.key === "step#send")?.record;
    expect(send).toMatchObject({ status: "failed", semantics: "at-most-once", error: { name: "StepInterruptedError" } });
    // Replays throw the same error again, and the body still never runs again.
    expect(await lab.engine("C").invoke("m1")).toEqual({ status: "finished" });
  });

  it("a body that finishes costs one extra write and replays normally", async () => {
    const flow = durable({ name: "sms-ok", input: Empty }, async (_in, step) => step.run("send", () => "sent", { semantics: "at-most-once" }));
    lab = sqliteLab([flow]);
    await lab.client().start(flow, { runId: "m2", input: {} });
    expect(await lab.engine("A").invoke("m2")).toEqual({ status: "completed", result: "sent" });
    expect((await lab.client().history("m2")).entries.map((e) => e.key)).toEqual(["start#send#1", "step#send"]);
  });
});

describe("at-least-once (the default)", () => {
  it("a crashed body runs again with the same key, and the record says how many invocations may have run it", async () => {
    const gates = new Gates();
    const keys: string[] = [];
    const flow = durable({ name: "charge-storm", input: Empty }, async (_in, step) => {
      await step.run("reserve", () => "held");
      return step.run("charge", async ({ idempotencyKey, attempt }) => {
        keys.push(`${idempotencyKey}@${attempt}`);
        if (keys.length <= 3) await gates.wait("charge"); // three invocations die inside the body
        return "charged";
      });
    });
    lab = sqliteLab([flow]);
    await lab.client().start(flow, { runId: "s1", input: {} });
    for (let i = 0; i < 3; i++) {
      void lab.engine(`dead-${i}`).invoke("s1");
      await gates.started("charge", i + 1);
      lab.clock.advance(31_000);
    }
    expect(await lab.engine("survivor").invoke("s1")).toEqual({ status: "completed", result: "charged" });
    expect(keys).toEqual(["s1/charge@1", "s1/charge@1", "s1/charge@1", "s1/charge@1"]);
    const charge = (await lab.client().history("s1")).entries.find((e) => e.key === "step#charge")?.record;
    // Recorded attempts: 1. The body ran up to 1 + 3 times: the three invocations that died.
    expect(charge).toMatchObject({ attempts: 1, possibleReruns: 3 });
  });

  it("a step after a clean suspension (a sleep) claims no possible reruns", async () => {
    const flow = durable({ name: "nap-then-charge", input: Empty }, async (_in, step) => {
      await step.sleep("nap", "1m");
      return step.run("charge", () => "charged");
    });
    lab = sqliteLab([flow]);
    await lab.client().start(flow, { runId: "s2", input: {} });
    expect(await lab.engine("A").invoke("s2")).toMatchObject({ status: "suspended" });
    lab.clock.advance(60_000);
    expect(await lab.engine("B").invoke("s2")).toEqual({ status: "completed", result: "charged" });
    const charge = (await lab.client().history("s2")).entries.find((e) => e.key === "step#charge")?.record;
    expect(charge).toMatchObject({ attempts: 1 });
    expect(charge).not.toHaveProperty("possibleReruns");
  });
});
