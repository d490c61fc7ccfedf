/**
 * Child process of checkpoint-kill.test.ts: appends records to the journal file in argv[2], one
 * commit each, for ever, its checkpoints on the worker thread (lib/local/checkpointer.ts).
 * Prints `acked <n>` once the first n appends were answered (every 32), and `checkpoint` for
 * each checkpoint the worker reports; the test kills it with SIGKILL while both go on.
 */
import { onCheckpoint } from "../../lib/local/checkpointer.ts";
import { openLocalDatabase } from "../../lib/local/database.ts";
import { SqliteJournalStore } from "../../lib/local/sqlite-store.ts";

const file = process.argv[2];
if (!file) throw new Error("usage: checkpoint-writer.ts <file>");
const store = new SqliteJournalStore(openLocalDatabase(file));
onCheckpoint((report) => process.stdout.write("error" in report ? `error ${report.error}\n` : `checkpoint ${report.checkpointed}\n`));
for (let i = 0; ; i++) {
  await store.appendRecord("w", { key: `step#s${i}`, body: { type: "step", result: i } });
  if ((i + 1) % 32 === 0) process.stdout.write(`acked ${i + 1}\n`);
  // Let the worker's reports reach the parent between appends.
  if ((i + 1) % 256 === 0) await new Promise((r) => setImmediate(r));
}
