/**
 * User schemas go through the Standard Schema interface: classic zod, zod/mini and a library
 * that is not zod at all (here a hand-written one, as Valibot or ArkType would present itself).
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import * as zm from "zod/mini";
import { durable, InvalidInputError, WorkflowDefinitionError, type StandardSchemaV1 } from "waymark";
import { createTestRuntime } from "waymark/testing";

/** A minimal non-zod Standard Schema: a positive integer. */
const positiveInt: StandardSchemaV1<unknown, number> = {
  "~standard": {
    version: 1,
    vendor: "hand-written",
    validate: (value) =>
      typeof value === "number" && Number.isInteger(value) && value > 0 ? { value } : { issues: [{ message: "a positive integer", path: [{ key: "n" }] }] },
  },
};

describe("schemas through the Standard Schema interface", () => {
  it("takes zod/mini for input and signals, with zod's inferred types and its issues", async () => {
    const Order = zm.object({ id: zm.string(), qty: zm.number().check(zm.positive()) });
    const flow = durable({ name: "mini", input: Order, signals: { go: zm.object({ ok: zm.boolean() }) } }, async (order, step) => {
      const go = await step.waitForSignal("go", { timeout: "1h" });
      const qty: number = order.qty; // inferred from zod/mini
      return go.received && go.payload.ok ? `${order.id}x${qty}` : "stopped";
    });
    const rt = createTestRuntime({ workflows: [flow] });
    const bad = await rt.start(flow, { runId: "m0", input: { id: 1, qty: 0 } as never }).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(InvalidInputError);
    expect((bad as InvalidInputError).issues.map((i) => i.path)).toEqual(["id", "qty"]);
    await rt.start(flow, { runId: "m1", input: { id: "a", qty: 2 } });
    await expect(rt.signal("m1", "go", { ok: "yes" })).rejects.toBeInstanceOf(InvalidInputError);
    await rt.signal("m1", "go", { ok: true });
    expect((await rt.get("m1")).result).toBe("ax2");
  });

  it("shows classic zod's own issue messages, as before", async () => {
    const flow = durable({ name: "classic", input: z.object({ email: z.email() }) }, async ({ email }) => email);
    const rt = createTestRuntime({ workflows: [flow] });
    const err = (await rt.start(flow, { runId: "c1", input: { email: "nope" } }).catch((e: unknown) => e)) as InvalidInputError;
    const expected = z.object({ email: z.email() }).safeParse({ email: "nope" }).error?.issues[0]?.message;
    expect(err.issues).toEqual([{ path: "email", message: expected }]);
  });

  it("takes a schema from another library, path segments included", async () => {
    const flow = durable({ name: "other", input: positiveInt }, async (n, step) => step.run("double", () => n * 2));
    const rt = createTestRuntime({ workflows: [flow] });
    const err = (await rt.start(flow, { runId: "o0", input: -1 }).catch((e: unknown) => e)) as InvalidInputError;
    expect(err.issues).toEqual([{ path: "n", message: "a positive integer" }]);
    await rt.start(flow, { runId: "o1", input: 21 });
    expect((await rt.get("o1")).result).toBe(42);
  });

  it("refuses a schema that validates asynchronously, writing nothing", async () => {
    const flow = durable({ name: "async", input: z.string().refine(async () => true) }, async (s) => s);
    const rt = createTestRuntime({ workflows: [flow] });
    await expect(rt.start(flow, { runId: "a1", input: "x" })).rejects.toBeInstanceOf(WorkflowDefinitionError);
    expect((await rt.client.list()).runs).toEqual([]);
  });

  it("refuses, when the workflow is defined, an input or signal that is not a schema (a JavaScript caller, a forgotten input)", () => {
    const noInput = { name: "no-input" } as unknown as { name: string; input: StandardSchemaV1 };
    expect(() => durable(noInput, async () => 1)).toThrow(WorkflowDefinitionError);
    expect(() => durable(noInput, async () => 1)).toThrow(/workflow "no-input": input must be a Standard Schema .*got nothing.*z\.object\(\{\}\)/);
    const badSignal = { name: "bad-signal", input: z.object({}), signals: { go: "yes" } } as unknown as { name: string; input: StandardSchemaV1 };
    expect(() => durable(badSignal, async () => 1)).toThrow(/signal "go" must be a Standard Schema .*got string/);
  });
});
