/**
 * The `waymark` command, over a local journal file.
 *
 *   waymark runs list [--status <status>] [--limit <n>] [--file <journal.db>]
 *   waymark runs show <runId> [--file <journal.db>]
 *   waymark signal … / waymark approve …   (over HTTP: see http-verbs.ts)
 *   waymark history export … / waymark check …   (see history-verbs.ts)
 */
import { existsSync } from "node:fs";
import { parseArgs } from "node:util";
import { Client } from "../client.ts";
import { createRegistry } from "../core/registry.ts";
import { WaymarkError } from "../core/errors.ts";
import { openLocalDatabase } from "../local/database.ts";
import { SqliteJournalStore } from "../local/sqlite-store.ts";
import { SqliteWakeTable } from "../local/wake-table.ts";
import { type RunStatus, systemClock } from "../ports.ts";
import { formatTimeline } from "./timeline.ts";
import { HTTP_USAGE, runHttpVerb } from "./http-verbs.ts";
import { HISTORY_USAGE, HistoryUsageError, runHistoryVerb } from "./history-verbs.ts";

const USAGE = `usage:
  waymark runs list [--status pending|running|suspended|completed|failed|cancelled] [--limit n] [--file path]
  waymark runs show <runId> [--file path]
${HTTP_USAGE}
${HISTORY_USAGE}

--file defaults to $WAYMARK_FILE or .waymark/journal.db`;

const STATUSES = new Set<RunStatus>(["pending", "running", "suspended", "completed", "failed", "cancelled"]);

class UsageError extends Error {
  override readonly name = "UsageError";
}

/** Runs the CLI; returns the exit code (0 ok, 1 failed, 2 usage). */
export async function main(argv: string[], out: (line: string) => void = console.log, err: (line: string) => void = console.error): Promise<number> {
  if (argv[0] === "signal" || argv[0] === "approve") return runHttpVerb(argv, out, err);
  try {
    if ((argv[0] === "history" || argv[0] === "check") && !argv.includes("--help") && !argv.includes("-h")) return await runHistoryVerb(argv, out, err);
    const { values, positionals } = parseArgs({
      args: argv,
      allowPositionals: true,
      options: { status: { type: "string" }, limit: { type: "string" }, file: { type: "string" }, help: { type: "boolean", short: "h" } },
    });
    if (values.help) {
      out(USAGE);
      return 0;
    }
    const [noun, verb, arg] = positionals;
    if (noun !== "runs" || (verb !== "list" && verb !== "show")) throw new UsageError(`unknown command: ${positionals.join(" ") || "(none)"}`);
    const file = values.file ?? process.env.WAYMARK_FILE ?? ".waymark/journal.db";
    if (!existsSync(file)) throw new UsageError(`no journal at ${file} (run something first, or pass --file)`);
    const db = openLocalDatabase(file);
    try {
      const client = new Client({ store: new SqliteJournalStore(db), wakes: new SqliteWakeTable(db), clock: systemClock, workflows: createRegistry([]) });
      if (verb === "list") {
        const status = values.status as RunStatus | undefined;
        if (status !== undefined && !STATUSES.has(status)) throw new UsageError(`unknown status "${status}"`);
        const limit = values.limit === undefined ? 50 : Number(values.limit);
        if (!Number.isInteger(limit) || limit < 1) throw new UsageError(`--limit must be a positive integer`);
        const page = await client.list({ ...(status ? { status } : {}), limit });
        if (page.runs.length === 0) out("no runs");
        for (const r of page.runs) {
          const detail = r.status === "suspended" ? (r.waitingFor ?? "") : r.error ? `${r.error.name}: ${r.error.message}` : "";
          out(`${r.runId.padEnd(24)} ${r.workflow.padEnd(16)} ${r.status.padEnd(10)} ${new Date(r.updatedAt).toISOString()}  ${detail}`.trimEnd());
        }
        return 0;
      }
      if (!arg) throw new UsageError("runs show needs a run id");
      const { run, entries } = await client.history(arg);
      out(formatTimeline(run, entries));
      return 0;
    } finally {
      db.close();
    }
  } catch (e) {
    if (e instanceof UsageError || e instanceof HistoryUsageError || (e as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")) {
      err(`waymark: ${(e as Error).message}\n${USAGE}`);
      return 2;
    }
    if (e instanceof WaymarkError) {
      err(`waymark: ${e.message}`);
      return 1;
    }
    throw e;
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main(process.argv.slice(2)).then((code) => process.exit(code));
}
