/**
 * The Lambda entry's edges: a bad direct start is a clear answer and writes nothing; an event
 * it does not handle is an `UnsupportedEventError`; a function deployed without its environment
 * fails with one `ConfigurationError` naming every missing variable. And `durable()`'s own
 * export, configured only by environment as the construct deploys it, runs a run end to end.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { ENV } from "../../lib/aws/config.ts";
import { LOCAL_CREDENTIALS, LOCAL_REGION } from "../setup/local-aws.ts";
import { peers } from "./endpoints.ts";
import { lambdaContext } from "./event-source.ts";
import { type E2e, createE2e } from "./harness.ts";
import { e2eWorkflows } from "./workflows.ts";

let e2e: E2e;
let flows: ReturnType<typeof e2eWorkflows>;
beforeAll(async () => {
  e2e = await createE2e({ endpoints: peers(), workflows: (ledger) => (flows = e2eWorkflows(ledger)).all });
});
afterAll(() => e2e.close());

describe("direct start with bad input", () => {
  it.each([
    ["an input that fails the workflow's schema", { runId: "bad-1", workflow: "steps-flow", input: { steps: "many" } }, "steps"],
    ["no run id", { workflow: "steps-flow", input: { steps: 1 } }, "runId"],
    ["a run id with a slash", { runId: "a/b", workflow: "steps-flow", input: { steps: 1 } }, "runId"],
    ["no workflow, in a function hosting three", { runId: "bad-2", input: { steps: 1 } }, "workflow"],
  ])("%s: { ok: false } with zod issues, nothing written", async (_what, event, path) => {
    const answer = (await e2e.handler({ waymark: "start", ...event }, lambdaContext())) as { ok: boolean; error: { name: string; issues: Array<{ path: string }> } };
    expect(answer).toMatchObject({ ok: false, error: { name: "InvalidInputError" } });
    expect(answer.error.issues.map((i) => i.path)).toContain(path);
    expect((await e2e.client.list({})).runs).toEqual([]);
    expect(e2e.sent, "no wake sent").toEqual([]);
  });

  it("a workflow this function does not host is an answer too, not a function error", async () => {
    const answer = await e2e.handler({ waymark: "start", runId: "bad-3", workflow: "refund-flow", input: {} }, lambdaContext());
    expect(answer).toMatchObject({ ok: false, error: { name: "InvalidInputError", issues: [{ path: "workflow", message: "one of steps-flow, nap-flow, poison-flow" }] } });
    expect((await e2e.client.list({})).runs).toEqual([]);
  });
});

describe("events the function does not handle", () => {
  it.each([
    ["an empty object", {}],
    ["an S3 notification", { Records: [{ eventSource: "aws:s3", s3: {} }] }],
    ["an unknown waymark action", { waymark: "reboot" }],
    ["a string", "start"],
  ])("%s throws UnsupportedEventError", async (_what, event) => {
    await expect(e2e.handler(event, lambdaContext())).rejects.toMatchObject({ name: "UnsupportedEventError" });
  });
});

describe("durable()'s own export as the Lambda handler, configured by environment", () => {
  const saved = { ...process.env };
  afterAll(() => {
    for (const key of Object.keys(process.env)) if (!(key in saved)) delete process.env[key];
    Object.assign(process.env, saved);
  });

  it("without its environment it fails with one ConfigurationError listing every missing variable", async () => {
    for (const name of Object.values(ENV)) delete process.env[name];
    const failure = flows.napFlow({ waymark: "start", runId: "env-0", input: { nap: "1s" } }, lambdaContext());
    await expect(failure).rejects.toMatchObject({ name: "ConfigurationError" });
    const message = await failure.catch((err: Error) => err.message);
    for (const name of [ENV.tableName, ENV.queueUrl, ENV.queueArn, ENV.scheduleGroup, ENV.schedulerRoleArn, ENV.schedulerDeadLetterArn]) {
      expect(message).toContain(`${name} is not set`);
    }
  });

  it("with it (endpoints through AWS_ENDPOINT_URL_*), it starts, sleeps on SQS, wakes and completes a run", async () => {
    // The cold start that failed above is retried by this invocation, now with a configuration.
    Object.assign(process.env, {
      [ENV.tableName]: e2e.config.tableName,
      [ENV.queueUrl]: e2e.config.queueUrl,
      [ENV.queueArn]: e2e.config.queueArn,
      [ENV.scheduleGroup]: e2e.config.scheduleGroup,
      [ENV.schedulerRoleArn]: e2e.config.schedulerRoleArn,
      [ENV.schedulerDeadLetterArn]: e2e.config.schedulerDeadLetterArn,
      AWS_REGION: LOCAL_REGION,
      AWS_ACCESS_KEY_ID: LOCAL_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: LOCAL_CREDENTIALS.secretAccessKey,
      AWS_ENDPOINT_URL_DYNAMODB: peers().dynamodb,
      AWS_ENDPOINT_URL_SQS: peers().sqs,
    });
    const written: string[] = [];
    const stdout = vi.spyOn(process.stdout, "write").mockImplementation((chunk) => (written.push(String(chunk)), true));
    try {
      const runId = "env-1";
      expect(await flows.napFlow({ waymark: "start", runId, input: { nap: "1s" } }, lambdaContext())).toMatchObject({ ok: true, created: true });
      await e2e.mapping({ handler: flows.napFlow }).runUntil(e2e.finished([runId]), { what: "the run to finish" });
      expect((await e2e.run(runId)).status).toBe("completed");
      // Its logs went to stdout, one JSON object per line in Powertools Logger's shape (the runtime's default).
      const lines = written.join("").split("\n").filter(Boolean).map((line) => JSON.parse(line) as { event: string; runId: string; timestamp: string; level: string; function_request_id?: string });
      expect(lines.filter((l) => l.event === "wake").map((l) => l.runId)).toEqual([runId, runId]);
      expect(lines.every((l) => typeof l.timestamp === "string" && /^(INFO|WARN|ERROR)$/.test(l.level))).toBe(true);
      expect(lines.filter((l) => l.event === "wake").every((l) => typeof l.function_request_id === "string")).toBe(true);
    } finally {
      stdout.mockRestore();
    }
  });
});
