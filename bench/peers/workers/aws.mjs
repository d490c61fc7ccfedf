// The AWS Lambda durable functions SDK under its local test runner (LocalDurableTestRunner):
// the handler runs in this process, its checkpoints go to an in-memory checkpoint server in a
// worker thread. A test harness, not a durable store: nothing outlives the process.
// Timing stops when the handler's last invocation returns SUCCEEDED; the runner's run() adds a
// fixed 100 ms wait after that (a setTimeout in its finally block), which is left out.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";
import { LocalDurableTestRunner } from "@aws/durable-execution-sdk-js-testing";
import { serveWorker } from "./serve.mjs";

/** Wraps a durable handler: `done` gets the time its invocation returned SUCCEEDED. */
function timedHandler(fn) {
  const inner = withDurableExecution(fn);
  const handler = async (event, context) => {
    const out = await inner(event, context);
    handler.onEnd?.(out, performance.now());
    return out;
  };
  handler.onEnd = undefined;
  return handler;
}

const seqHandler = timedHandler(async (event, ctx) => {
  let last = 0;
  for (let i = 0; i < event.n; i++) last = await ctx.step("s", async () => i);
  return last;
});
const waitHandler = timedHandler(async (event, ctx) => {
  for (let i = 0; i < event.n; i++) await ctx.step("s", async () => i);
  const [promise] = await ctx.createCallback("go");
  return await promise;
});
const fiveHandler = timedHandler(async (event, ctx) => {
  for (let i = 0; i < event.n; i++) await ctx.step("s", async () => i);
});

/** Resolves with the time of the handler's first invocation that ends with `status`. */
function ended(handler, status) {
  return new Promise((resolve, reject) => {
    handler.onEnd = (out, at) => {
      if (out?.Status === status) resolve(at);
      else if (out?.Status !== "PENDING") reject(new Error(`handler ended ${JSON.stringify(out).slice(0, 300)}`));
    };
  });
}

function check(execution, what) {
  if (execution.getStatus() !== "SUCCEEDED") throw new Error(`${what}: ${execution.getStatus()} ${JSON.stringify(execution.getError())}`);
}

async function seq({ n }) {
  const done = ended(seqHandler, "SUCCEEDED");
  const t0 = performance.now();
  const execution = await new LocalDurableTestRunner({ handlerFunction: seqHandler }).run({ payload: { n } });
  check(execution, "seq");
  if (execution.getResult() !== n - 1) throw new Error(`seq returned ${execution.getResult()}`);
  return (await done) - t0;
}

async function resume({ n }) {
  const runner = new LocalDurableTestRunner({ handlerFunction: waitHandler });
  const suspended = ended(waitHandler, "PENDING");
  const running = runner.run({ payload: { n } });
  await suspended;
  const callback = runner.getOperation("go");
  await callback.waitForData();
  const done = ended(waitHandler, "SUCCEEDED");
  const t0 = performance.now();
  await callback.sendCallbackSuccess("ok");
  const at = await done;
  check(await running, "resume");
  return at - t0;
}

/** All runs started at once (each LocalDurableTestRunner runs one execution), until the last handler returned. */
async function many({ runs, steps }) {
  let last = 0;
  let left = runs;
  const allDone = new Promise((resolve, reject) => {
    fiveHandler.onEnd = (out, at) => {
      if (out?.Status === "PENDING") return;
      if (out?.Status !== "SUCCEEDED") return reject(new Error(`five ended ${JSON.stringify(out).slice(0, 300)}`));
      last = Math.max(last, at);
      if (--left === 0) resolve();
    };
  });
  const t0 = performance.now();
  const executions = Array.from({ length: runs }, () => new LocalDurableTestRunner({ handlerFunction: fiveHandler }).run({ payload: { n: steps } }));
  await allDone;
  for (const execution of await Promise.all(executions)) check(execution, "five");
  return runs / ((last - t0) / 1000);
}

serveWorker({
  init: async () => {
    await LocalDurableTestRunner.setupTestEnvironment({ skipTime: false });
    return `node ${process.version}, LocalDurableTestRunner (in-memory checkpoint server in a worker thread)`;
  },
  seq,
  resume,
  many,
  close: async () => {
    await LocalDurableTestRunner.teardownTestEnvironment();
    return 0;
  },
});
