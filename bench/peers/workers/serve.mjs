// The worker side of run.ts's protocol: one request at a time over the IPC channel,
// { id, op, args } in, { id, ok, value | error } out. Shared by every worker (serve.d.mts types it).
export function serveWorker(ops) {
  process.on("message", async ({ id, op, args }) => {
    try {
      const fn = ops[op];
      if (typeof fn !== "function") throw new Error(`this worker has no op ${op}`);
      const value = await fn(args ?? {});
      process.send({ id, ok: true, value });
    } catch (err) {
      process.send({ id, ok: false, error: err instanceof Error ? (err.stack ?? err.message) : String(err) });
    }
  });
}

