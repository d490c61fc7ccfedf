/**
 * A 1 MiB step result written and replayed: inline in the SQLite journal (its limit raised) vs by
 * reference in S3 on the local peer (s3rver, real HTTP and SigV4) vs by reference in a directory.
 * Invocation 1 runs the step and suspends on a sleep (the write); invocation 2 replays the step,
 * reading the value back, and completes (the replay).
 */
import { join } from "node:path";
import { createRegistry, durable, Client, Engine, type PayloadOptions } from "../lib/index.ts";
import { openLocalDatabase } from "../lib/local/database.ts";
import { DirPayloadStore } from "../lib/local/dir-payloads.ts";
import { SqliteJournalStore } from "../lib/local/sqlite-store.ts";
import { S3PayloadStore } from "../lib/aws/s3-payloads.ts";
import { MemoryWakeQueue, VirtualClock } from "../lib/testing/index.ts";
import { PAYLOAD_BUCKET, s3PeerClient, startS3Peer } from "../test/setup/s3-peer.ts";
import { Empty } from "../test/core/helpers.ts";
import { type Sample, repeat, summarise } from "./stats.ts";

const MiB = 1024 * 1024;
const blob = "x".repeat(MiB - 2); // 1 MiB as JSON, quotes included

const bigResult = durable({ name: "bench-1mib", input: Empty }, async (_in, step) => {
  const value = await step.run("blob", () => blob);
  await step.sleep("pause", "1s");
  return value.length;
});

export interface PayloadBenchRow {
  label: string;
  write: Sample;
  replay: Sample;
}

/** Runs the three variants on one SQLite file; `dir` is a scratch directory. */
export async function payloadBench(dir: string, reps: { runs: number; warmup: number }): Promise<PayloadBenchRow[]> {
  const s3 = await startS3Peer();
  const client = s3PeerClient(s3.endpoint);
  try {
    const variants: Array<[string, PayloadOptions | undefined]> = [
      ["inline in the SQLite journal (maxValueBytes raised to 2 MiB)", undefined],
      ["by reference, S3 on s3rver (PutObject / GetObject over loopback)", { store: new S3PayloadStore({ bucket: PAYLOAD_BUCKET, client }) }],
      ["by reference, a directory beside the journal", { store: new DirPayloadStore(join(dir, "payloads.db.payloads")) }],
    ];
    const rows: PayloadBenchRow[] = [];
    for (const [label, payloads] of variants) {
      const db = openLocalDatabase(join(dir, `payloads-${rows.length}.db`));
      const store = new SqliteJournalStore(db);
      const clock = new VirtualClock();
      const ports = { store, wakes: new MemoryWakeQueue(), clock, workflows: createRegistry([bigResult]), ...(payloads ? { payloads } : {}) };
      const engine = new Engine({ ...ports, owner: "bench", ...(payloads ? {} : { maxValueBytes: 2 * MiB }) });
      const api = new Client(ports);
      let n = 0;
      const writes: number[] = [];
      const replays: number[] = [];
      const once = async (): Promise<number> => {
        const runId = `p-${++n}`;
        await api.start(bigResult, { runId, input: {} });
        let t = performance.now();
        const first = await engine.invoke(runId);
        writes.push(performance.now() - t);
        clock.advance(1_000);
        t = performance.now();
        const second = await engine.invoke(runId);
        const replay = performance.now() - t;
        replays.push(replay);
        if (first.status !== "suspended" || second.status !== "completed") throw new Error(`bench run ${runId}: ${first.status}, then ${second.status}`);
        return replay;
      };
      await repeat(once, reps);
      const keep = (xs: number[]) => xs.slice(reps.warmup);
      rows.push({ label, write: summarise(keep(writes)), replay: summarise(keep(replays)) });
      db.close();
    }
    return rows;
  } finally {
    client.destroy();
    await s3.stop();
  }
}

