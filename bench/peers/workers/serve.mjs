// The worker side of run.ts's protocol: one request at a time over the IPC channel,
// { id, op, args } in, { id, ok, value | error } out. Shared by every worker (serve.d.mts types it).
// `close` runs once; a worker whose parent is gone (the channel closes) closes and exits.
export function serveWorker(ops) {
  let closing;
  const close = () => (closing ??= Promise.resolve().then(() => ops.close({})));
  process.on("message", async ({ id, op, args }) => {
    try {
      const fn = op === "close" ? close : ops[op];
      if (typeof fn !== "function") throw new Error(`this worker has no op ${op}`);
      const value = await fn(args ?? {});
      process.send({ id, ok: true, value });
    } catch (err) {
      process.send({ id, ok: false, error: err instanceof Error ? (err.stack ?? err.message) : String(err) });
    }
  });
  process.once("disconnect", () => void close().catch(() => undefined).finally(() => process.exit(0)));
}
