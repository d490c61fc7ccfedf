/**
 * Child process of `run.ts`: the first replay in a fresh process, as after a restart of the
 * local runtime or a Lambda cold start. Opens the journal file, invokes the run once (it
 * replays every recorded step and suspends again), and prints the milliseconds it took.
 * Usage: node --conditions=waymark-source --import tsx bench/cold-replay.ts <file> <runId>
 */
import { replayInvocation, sqliteEngine } from "./scenarios.ts";

const [file, runId] = process.argv.slice(2);
if (file === undefined || runId === undefined) throw new Error("usage: cold-replay.ts <file> <runId>");
const h = sqliteEngine(file);
try {
  console.log(String(await replayInvocation(h.engine, runId)));
} finally {
  h.close();
}
