/**
 * Item 15: the approver is who the link was minted for, not whoever the body names. A wait can
 * name its approvers; each gets a link of their own, a delivery through it is recorded (and
 * shown to the workflow) as sent by that approver, verified; a body naming someone else through
 * that link is refused. A link for anyone still works, and the approver its body names is kept
 * as claimed only. Real SQLite journal, real dev server.
 */
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { durable } from "waymark";
import type { DevServer, LocalRuntime } from "waymark/local";
import type { ApprovalLink } from "../../lib/core/definition.ts";
import { Approval, SECRET, snapshot, startDevLab, stopDevLab, tempDir } from "./helpers.ts";
import { until } from "../support/until.ts";

const sent = new Map<string, ApprovalLink[]>();
const remember = (link: ApprovalLink) => void sent.set(link.runId, [...(sent.get(link.runId) ?? []), link]);

const namedApprovers = durable({ name: "named-approvers", input: z.object({}).strict(), signals: { approval: Approval } }, async (_in, step) => {
  const d = await step.waitForSignal("approval", { timeout: "1h", approvers: ["ana", "ben"], notify: remember });
  return d.received ? { approved: d.payload.approved, sender: d.sender ?? null } : "timeout";
});

const anyApprover = durable({ name: "any-approver", input: z.object({}).strict(), signals: { approval: Approval } }, async (_in, step) => {
  const d = await step.waitForSignal("approval", { timeout: "1h", notify: remember });
  return d.received ? { sender: d.sender ?? null } : "timeout";
});

let runtime: LocalRuntime;
let server: DevServer;

beforeAll(async () => {
  ({ runtime, server } = await startDevLab({ workflows: [namedApprovers, anyApprover], file: join(tempDir(), "journal.db") }));
});

afterAll(() => stopDevLab({ runtime, server }));

async function post(url: string, payload: unknown) {
  const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(payload) });
  return { status: res.status, body: (await res.json()) as { error?: { name: string } } & Record<string, unknown> };
}

describe("approval links per named approver (item 15)", () => {
  it("one link per approver; the approval is recorded as sent by the link's approver, verified", async () => {
    await runtime.client.start(namedApprovers, { runId: "ap-1", input: {} });
    // The links go out before the run suspends.
    await until("ap-1 to wait", async () => ((await runtime.client.get("ap-1")).status === "suspended" ? true : undefined));
    const links = sent.get("ap-1") ?? [];
    expect(links.map((l) => l.approver)).toEqual(["ana", "ben"]);
    const [ana, ben] = links as [ApprovalLink, ApprovalLink];
    expect(ana.token).not.toBe(ben.token);
    expect(await (await fetch(ana.url as string)).json()).toMatchObject({ approver: "ana", open: true });

    // Ana's leaked link, used by someone who says they are mallory: refused, nothing written.
    const before = await snapshot(runtime.client);
    const forged = await post(ana.url as string, { approved: true, approver: "mallory" });
    expect(forged).toMatchObject({ status: 403, body: { error: { name: "ApproverMismatchError" } } });
    expect(await snapshot(runtime.client)).toBe(before);

    expect((await post(ben.url as string, { approved: true, approver: "ben" })).status).toBe(200);
    expect(await runtime.waitForRun("ap-1")).toMatchObject({ status: "completed", result: { approved: true, sender: { id: "ben", verified: true } } });
    const signal = (await runtime.client.history("ap-1")).entries.find((e) => e.record?.type === "signal")?.record;
    expect(signal).toMatchObject({ type: "signal", sender: { id: "ben", verified: true } });
    // The first link used decided the wait: ana's now gets the decision.
    expect(await post(ana.url as string, { approved: false, approver: "ana" })).toMatchObject({ status: 409, body: { error: { name: "WaitResolvedError" } } });
  });

  it("a link for anyone records the approver its body names as claimed, not verified", async () => {
    await runtime.client.start(anyApprover, { runId: "ap-2", input: {} });
    const [link] = await until("the link", () => sent.get("ap-2"));
    expect(link?.approver).toBeUndefined();
    expect((await post(link?.url as string, { approved: true, approver: "cy" })).status).toBe(200);
    expect(await runtime.waitForRun("ap-2")).toMatchObject({ result: { sender: { id: "cy", verified: false } } });
  });
});
