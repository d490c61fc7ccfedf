/**
 * A child process of `sqlite-store.test.ts`: opens the journal file on its own connection and
 * races the other racers for a lease and a record on each run, as two local processes would.
 *
 *   node --import tsx test/contract/sqlite-racer.ts <file> <owner> <runIdPrefix> <count>
 *
 * Prints `ready` once the file is open and waits for a line on stdin, so the parent can start
 * every racer at once; then prints one JSON line: for each run, whether this racer got the
 * lease and wrote the record. The runs are `<runIdPrefix>-0` … `<runIdPrefix>-<count - 1>`.
 */
import { openLocalDatabase } from "../../lib/local/database.ts";
import { SqliteJournalStore } from "../../lib/local/sqlite-store.ts";

const [file, owner, prefix, count] = process.argv.slice(2);
if (!file || !owner || !prefix || !count) throw new Error("usage: sqlite-racer.ts <file> <owner> <runIdPrefix> <count>");
const runIds = Array.from({ length: Number(count) }, (_, i) => `${prefix}-${i}`);

const db = openLocalDatabase(file);
const store = new SqliteJournalStore(db);
process.stdout.write("ready\n");
await new Promise((resolve) => process.stdin.once("data", resolve));
process.stdin.pause();
const results: Array<{ runId: string; leased: boolean; wrote: boolean; sawBody?: unknown }> = [];
for (const runId of runIds) {
  const lease = await store.acquireLease(runId, { owner, now: Date.now(), ttlMs: 60_000 });
  const append = await store.appendRecord(runId, { key: "step#charge", body: { owner } });
  results.push({ runId, leased: lease.acquired, wrote: append.written, ...(append.written ? {} : { sawBody: append.existing.body }) });
}
db.close();
process.stdout.write(`${JSON.stringify({ owner, results })}\n`);
