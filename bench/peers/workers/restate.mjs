// Restate: the server (a Rust binary from the npm package, its own RocksDB log and state, started
// by run.ts on loopback ports) drives handlers served by this process's HTTP/2 endpoint (the
// SDK's default, bidirectional streaming); every ctx.run result is journaled by the server before
// the handler goes on. Requests go through the server's ingress, as a client's would.
import * as restate from "@restatedev/restate-sdk";
import { serveWorker } from "./serve.mjs";

const seqService = restate.service({
  name: "seq",
  handlers: {
    run: async (ctx, { n }) => {
      let last = 0;
      for (let i = 0; i < n; i++) last = await ctx.run("s", () => i);
      return last;
    },
  },
});
// The waiting run gives up its stream 100 ms after it has nothing left to do (the server's
// inactivity timeout, 1 minute by default), so the resume below is a real re-invocation that
// replays the journal, as Waymark's is.
const waitWorkflow = restate.workflow({
  name: "wait",
  handlers: {
    run: restate.handlers.workflow.workflow({ inactivityTimeout: 100 }, async (ctx, { n }) => {
      for (let i = 0; i < n; i++) await ctx.run("s", () => i);
      return await ctx.promise("go");
    }),
    go: async (ctx) => {
      await ctx.promise("go").resolve("ok");
    },
  },
});
const fiveService = restate.service({
  name: "five",
  handlers: {
    run: async (ctx, { n }) => {
      for (let i = 0; i < n; i++) await ctx.run("s", () => i);
    },
  },
});

let ingress = "";
let admin = "";
let keys = 0;

async function call(url, init) {
  const res = await fetch(url, init);
  const text = await res.text();
  if (!res.ok) throw new Error(`${init?.method ?? "GET"} ${url}: ${res.status} ${text.slice(0, 500)}`);
  return text ? JSON.parse(text) : null;
}
const post = (url, body) => call(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

async function statusOf(key) {
  const q = `SELECT status FROM sys_invocation WHERE target_service_name = 'wait' AND target_service_key = '${key}' AND target_handler_name = 'run'`;
  const out = await call(`${admin}/query`, { method: "POST", headers: { "content-type": "application/json", accept: "application/json" }, body: JSON.stringify({ query: q }) });
  return out?.rows?.[0]?.status;
}

async function seq({ n }) {
  const t0 = performance.now();
  const last = await post(`${ingress}/seq/run`, { n });
  const ms = performance.now() - t0;
  if (last !== n - 1) throw new Error(`seq returned ${last}`);
  return ms;
}

async function resume({ n }) {
  const key = `w${++keys}-${process.pid}`;
  await post(`${ingress}/wait/${key}/run/send`, { n });
  const deadline = Date.now() + 120_000;
  while ((await statusOf(key)) !== "suspended") {
    if (Date.now() > deadline) throw new Error(`wait/${key} never suspended: ${await statusOf(key)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  const t0 = performance.now();
  await post(`${ingress}/wait/${key}/go`, null);
  const out = await call(`${ingress}/restate/workflow/wait/${key}/attach`);
  const ms = performance.now() - t0;
  if (out !== "ok") throw new Error(`resume returned ${JSON.stringify(out)}`);
  return ms;
}

/** Every run sent first (each answered at once with its invocation id), then each one's end awaited. */
async function many({ runs, steps }) {
  const t0 = performance.now();
  const ids = [];
  for (let i = 0; i < runs; i++) ids.push((await post(`${ingress}/five/run/send`, { n: steps })).invocationId);
  for (const id of ids) await call(`${ingress}/restate/invocation/${id}/attach`);
  return runs / ((performance.now() - t0) / 1000);
}

serveWorker({
  init: async (args) => {
    ingress = String(args.ingress);
    admin = String(args.admin);
    const port = await restate.endpoint().bind(seqService).bind(waitWorkflow).bind(fiveService).listen(Number(args.port));
    await post(`${admin}/deployments`, { uri: `http://127.0.0.1:${port}`, force: true });
    return `node ${process.version}, @restatedev/restate-sdk HTTP/2 endpoint on :${port}`;
  },
  seq,
  resume,
  many,
  close: async () => 0,
});
