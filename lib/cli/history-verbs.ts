/**
 * History verbs of the `waymark` command: export a run's history from a journal (a SQLite file or
 * a DynamoDB table), and check histories against today's workflow code before a deploy.
 *
 *   waymark history export <runId> [--file <journal.db> | --table <name>] [--out <file.json>]
 *   waymark check --histories <dir> --workflows <module> [--workflows <module> …]
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import type { AnyWorkflow } from "../core/definition.ts";
import { RunNotFoundError } from "../core/errors.ts";
import { parseHistory, toHistory, type RunHistory } from "../core/history.ts";
import type { JournalStore } from "../ports.ts";
import { replayHistories } from "../testing/replay-histories.ts";
import { CliUsageError, loadWorkflows, openJournal } from "./journal.ts";

export const HISTORY_USAGE = `  waymark history export <runId> [--file path | --table name] [--out file.json]
  waymark check --histories <dir> --workflows <module> [--workflows <module> …]`;

export class HistoryUsageError extends Error {
  override readonly name = "HistoryUsageError";
}

/** Runs `history export` or `check`; returns the exit code (0 ok, 1 a history diverged or was not found, 2 usage). */
export async function runHistoryVerb(argv: string[], out: (line: string) => void, err: (line: string) => void): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      file: { type: "string" },
      table: { type: "string" },
      out: { type: "string" },
      histories: { type: "string" },
      workflows: { type: "string", multiple: true },
    },
  });
  if (positionals[0] === "check") return check(values.histories, values.workflows ?? [], out, err);
  if (positionals[0] !== "history" || positionals[1] !== "export") throw new HistoryUsageError(`unknown command: ${positionals.join(" ")}`);
  const runId = positionals[2];
  if (!runId) throw new HistoryUsageError("history export needs a run id");
  if (values.file !== undefined && values.table !== undefined) throw new HistoryUsageError("give --file or --table, not both");
  const { store, close } = await openStore(values.file, values.table);
  try {
    const journal = await store.loadJournal(runId);
    if (!journal) throw new RunNotFoundError(runId);
    const text = `${JSON.stringify(toHistory(journal.run, journal.records, `${journal.run.workflow} ${journal.run.status}${journal.run.waitingFor ? `, waiting for ${journal.run.waitingFor}` : ""}`), null, 2)}\n`;
    if (values.out === undefined) out(text.trimEnd());
    else {
      writeFileSync(values.out, text);
      err(`wrote ${values.out} (${journal.records.length} records)`);
    }
    return 0;
  } finally {
    await close();
  }
}

async function openStore(file: string | undefined, table: string | undefined): Promise<{ store: JournalStore; close: () => Promise<void> }> {
  // The same access as `waymark runs` (journal.ts): AWS settings from the environment.
  return openJournal({ file, table }, []);
}

async function check(dir: string | undefined, modules: string[], out: (line: string) => void, err: (line: string) => void): Promise<number> {
  if (dir === undefined) throw new HistoryUsageError("check needs --histories <dir>");
  if (modules.length === 0) throw new HistoryUsageError("check needs --workflows <module> (a file that exports your workflows)");
  if (!existsSync(dir)) throw new HistoryUsageError(`no folder ${dir}`);
  let workflows: AnyWorkflow[];
  try {
    workflows = await loadWorkflows(modules); // a .ts module through tsx, as for every --workflows
  } catch (e) {
    if (e instanceof CliUsageError) throw new HistoryUsageError(e.message);
    throw e;
  }
  const files = readdirSync(dir).filter((f) => f.endsWith(".json")).sort();
  if (files.length === 0) throw new HistoryUsageError(`no .json histories in ${dir}`);
  const histories: RunHistory[] = files.map((f) => parseHistory(JSON.parse(readFileSync(join(dir, f), "utf8")) as unknown, f));
  const reports = await replayHistories({ workflows, histories });
  let failed = 0;
  reports.forEach((r, i) => {
    if (r.ok) out(`ok    ${files[i]}  ${r.runId} (${r.workflow}) replays to ${r.reached}`);
    else {
      failed++;
      err(`FAIL  ${files[i]}  ${r.runId} (${r.workflow}): ${r.error?.name}: ${r.error?.message}`);
    }
  });
  out(`${reports.length - failed} of ${reports.length} histories replay on today's code`);
  return failed === 0 ? 0 : 1;
}
