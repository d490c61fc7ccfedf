// DBOS Transact: workflows run in this process; each step's result is committed to the system
// database (PostgreSQL, a throwaway cluster run.ts starts, default settings: fsync and
// synchronous_commit on) before the workflow goes on.
import { DBOS } from "@dbos-inc/dbos-sdk";
import { serveWorker } from "./serve.mjs";

const seqWorkflow = DBOS.registerWorkflow(async (n) => {
  let last = 0;
  for (let i = 0; i < n; i++) last = await DBOS.runStep(async () => i, { name: "s" });
  return last;
}, { name: "seq" });
// DBOS.recv waits in memory (woken through LISTEN/NOTIFY): a send resumes it without a replay.
const waitWorkflow = DBOS.registerWorkflow(async (n) => {
  for (let i = 0; i < n; i++) await DBOS.runStep(async () => i, { name: "s" });
  await DBOS.setEvent("ready", true);
  return await DBOS.recv("go", 3600);
}, { name: "wait" });
const fiveWorkflow = DBOS.registerWorkflow(async (n) => {
  for (let i = 0; i < n; i++) await DBOS.runStep(async () => i, { name: "s" });
}, { name: "five" });

async function seq({ n }) {
  const t0 = performance.now();
  const last = await seqWorkflow(n);
  const ms = performance.now() - t0;
  if (last !== n - 1) throw new Error(`seq returned ${last}`);
  return ms;
}

async function resume({ n }) {
  const handle = await DBOS.startWorkflow(waitWorkflow)(n);
  if ((await DBOS.getEvent(handle.workflowID, "ready", 120)) !== true) throw new Error("wait never got to recv");
  const t0 = performance.now();
  await DBOS.send(handle.workflowID, "ok", "go");
  const out = await handle.getResult();
  const ms = performance.now() - t0;
  if (out !== "ok") throw new Error(`resume returned ${JSON.stringify(out)}`);
  return ms;
}

/** Every run started first (DBOS.startWorkflow returns once the run is recorded), then each one's result awaited. */
async function many({ runs, steps }) {
  const t0 = performance.now();
  const handles = [];
  for (let i = 0; i < runs; i++) handles.push(await DBOS.startWorkflow(fiveWorkflow)(steps));
  for (const h of handles) await h.getResult();
  return runs / ((performance.now() - t0) / 1000);
}

serveWorker({
  init: async (args) => {
    DBOS.setConfig({ name: "waymark-peers", systemDatabaseUrl: String(args.url), logLevel: "error" });
    await DBOS.launch();
    return `node ${process.version}, @dbos-inc/dbos-sdk with its system database on ${String(args.server)}`;
  },
  seq,
  resume,
  many,
  close: async () => {
    await DBOS.shutdown();
    return 0;
  },
});
