/**
 * The `waymark` command.
 *
 *   waymark runs list|show|start|signal|cancel|history export … [--file <journal.db> | --table <name>]   (runs-verbs.ts)
 *   waymark dev <module> / waymark dashboard --table <name>   (dev-verbs.ts)
 *   waymark signal … / waymark approve …   (over HTTP: see http-verbs.ts)
 *   waymark history export … / waymark check …   (see history-verbs.ts)
 */
import { parseArgs } from "node:util";
import { WaymarkError } from "../core/errors.ts";
import { HTTP_USAGE, runHttpVerb } from "./http-verbs.ts";
import { HISTORY_USAGE, HistoryUsageError, runHistoryVerb } from "./history-verbs.ts";
import { DASHBOARD_HELP, DEV_HELP, runDevVerb } from "./dev-verbs.ts";
import { JournalUnreachableError } from "./journal.ts";
import { RUNS_USAGE, runRunsVerb } from "./runs-verbs.ts";

const USAGE = `usage:
${RUNS_USAGE}
  ${DEV_HELP.split("\n")[0]}
  ${DASHBOARD_HELP.split("\n")[0]}
${HTTP_USAGE}
${HISTORY_USAGE}

--file defaults to $WAYMARK_FILE or .waymark/journal.db; --table uses AWS_REGION, AWS_PROFILE, …
waymark <command> --help tells more`;

class UsageError extends Error {
  override readonly name = "UsageError";
}

/** Runs the CLI; returns the exit code (0 ok, 1 failed, 2 usage, 3 the journal cannot be reached). */
export async function main(argv: string[], out: (line: string) => void = console.log, err: (line: string) => void = console.error): Promise<number> {
  if (argv[0] === "signal" || argv[0] === "approve") return runHttpVerb(argv, out, err);
  if (argv[0] === "dev" || argv[0] === "dashboard") return runDevVerb(argv, out, err);
  try {
    if (argv[0] === "runs") return await runRunsVerb(argv.slice(1), out, err);
    if ((argv[0] === "history" || argv[0] === "check") && !argv.includes("--help") && !argv.includes("-h")) return await runHistoryVerb(argv, out, err);
    const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: { help: { type: "boolean", short: "h" } } });
    if (values.help || positionals.length === 0) {
      out(USAGE);
      return values.help ? 0 : 2;
    }
    throw new UsageError(`unknown command: ${positionals.join(" ")}`);
  } catch (e) {
    if (e instanceof UsageError || e instanceof HistoryUsageError || (e as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")) {
      err(`waymark: ${(e as Error).message}\n${USAGE}`);
      return 2;
    }
    if (e instanceof JournalUnreachableError) {
      err(`waymark: ${e.message}`);
      return 3;
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
