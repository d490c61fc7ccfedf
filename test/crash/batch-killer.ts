/**
 * Child process of group-commit.test.ts: appends <batch size> records at once (one group commit) to
 * the journal file in argv[2], and SIGKILLs itself where argv[3] says — `inside`: from within
 * the commit's transaction, as the middle record is inserted (a temp trigger calls `die()`);
 * `after`: once every append has been answered. Prints nothing; the test reads the file.
 */
import { openLocalDatabase } from "../../lib/local/database.ts";
import { SqliteJournalStore } from "../../lib/local/sqlite-store.ts";

const [file, where, durability, size] = process.argv.slice(2);
if (!file || (where !== "inside" && where !== "after")) throw new Error("usage: batch-killer.ts <file> inside|after normal|full <batch size>");
const BATCH = Number(size);
const KILL_AT = Math.floor(BATCH / 2);
const db = openLocalDatabase(file, { durability: durability === "full" ? "full" : "normal" });
const store = new SqliteJournalStore(db);
const die = (): number => {
  process.kill(process.pid, "SIGKILL");
  return 0;
};
db.function("die", die);
if (where === "inside") db.exec(`CREATE TEMP TRIGGER die_here AFTER INSERT ON records WHEN NEW.key = 'step#s${KILL_AT}' BEGIN SELECT die(); END`);
await Promise.all(Array.from({ length: BATCH }, (_, i) => store.appendRecord("batch", { key: `step#s${i}`, body: { type: "step", result: i } })));
die();
