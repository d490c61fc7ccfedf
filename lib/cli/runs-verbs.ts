/**
 * `waymark runs <verb>`: list, show, start, signal, wake and cancel runs, and export a run's history,
 * in a SQLite journal file or a deployed DynamoDB table. Exit codes: 0 done, 1 refused (no such
 * run, a bad input or payload, a decided wait), 2 usage, 3 the journal cannot be reached.
 */
import { parseArgs } from "node:util";
import { WaymarkError } from "../core/errors.ts";
import { RUN_STATUSES, type RunStatus } from "../ports.ts";
import { runHistoryVerb } from "./history-verbs.ts";
import { CliUsageError, JournalUnreachableError, explainAccessError, loadWorkflows, openJournal, type JournalTarget } from "./journal.ts";
import { formatTimeline } from "./timeline.ts";
import { decidedWait } from "./decided-wait.ts";

const WHERE = "[--file journal.db | --table name [--queue url]]";
export const RUNS_HELP: Record<string, string> = {
  list: `waymark runs list [--status pending|queued|running|suspended|completed|failed|cancelled] [--limit n] [--cursor c] [--json] ${WHERE}
  Runs, newest first. --json prints { runs, cursor }; pass --cursor to get the next page.`,
  show: `waymark runs show <runId> [--json] ${WHERE}
  The run and its timeline; --json prints { run, entries }.`,
  start: `waymark runs start <workflow> --run-id <id> --input '<json>' --workflows <module> ${WHERE}
  Starts a run (idempotent by run id). The input is checked against the workflow's schema, so the
  workflow's code is needed (--workflows, a module that exports it).`,
  signal: `waymark runs signal <runId> <name> --payload '<json>' --workflows <module> [--wait-id id] [--signal-id id] [--buffer] ${WHERE}
  Delivers a signal (checked against its schema) to the run's open wait of that name. The same
  --signal-id twice is one signal. When that wait was already decided and none is open, nothing
  is sent (exit 1); --buffer keeps the signal for a later wait of that name instead.`,
  cancel: `waymark runs cancel <runId> [--reason text] ${WHERE}
  Asks a run to cancel: it gets CancelledError at its next wait (or out of the step it is running),
  runs its compensations and ends cancelled with the reason. A run that never started (pending,
  or queued with no step run) ends at once.`,
  wake: `waymark runs wake <runId> [--step stepId] ${WHERE}
  Ends the run's current sleep now (or the sleep named), journaled so every replay agrees, and
  wakes the run: a 1 h cool-off in dev need not take an hour.`,
  history: `waymark runs history export <runId> [--out file.json] [--file journal.db | --table name]
  The run's history as JSON, for waymark check --histories.`,
};

export const RUNS_USAGE = Object.values(RUNS_HELP).map((h) => `  ${h.split("\n")[0]}`).join("\n");

const STATUSES = new Set<string>(RUN_STATUSES);

/**
 * Runs one `waymark runs` verb; returns the exit code.
 *
 * @example
 * ```ts
 * const code = await runRunsVerb(["list", "--status", "suspended", "--table", "orders-journal"], console.log, console.error);
 * ```
 */
export async function runRunsVerb(argv: string[], out: (line: string) => void, err: (line: string) => void): Promise<number> {
  const verb = argv[0] ?? "";
  const help = RUNS_HELP[verb];
  if (argv.includes("--help") || argv.includes("-h") || !help) {
    if (!help && verb !== "" && verb !== "--help" && verb !== "-h") {
      err(`waymark: unknown verb "runs ${verb}"\nusage:\n${RUNS_USAGE}`);
      return 2;
    }
    out(help ?? `usage:\n${RUNS_USAGE}\n\n--file defaults to $WAYMARK_FILE or .waymark/journal.db; AWS settings come from AWS_REGION, AWS_PROFILE, …`);
    return 0;
  }
  if (verb === "history") return runHistoryVerb(["history", ...argv.slice(1)], out, err);
  let target: JournalTarget = {};
  try {
    const { values, positionals } = parseArgs({
      args: argv.slice(1),
      allowPositionals: true,
      options: {
        file: { type: "string" },
        table: { type: "string" },
        queue: { type: "string" },
        status: { type: "string" },
        limit: { type: "string" },
        cursor: { type: "string" },
        json: { type: "boolean" },
        "run-id": { type: "string" },
        input: { type: "string" },
        payload: { type: "string" },
        "wait-id": { type: "string" },
        "signal-id": { type: "string" },
        buffer: { type: "boolean" },
        reason: { type: "string" },
        step: { type: "string" },
        workflows: { type: "string", multiple: true },
      },
    });
    target = { file: values.file, table: values.table, queue: values.queue };
    const needsCode = verb === "start" || verb === "signal";
    if (needsCode && !values.workflows?.length) throw new CliUsageError(`runs ${verb} checks against the workflow's schema: pass --workflows <module> (a file that exports it)`);
    const input = verb === "start" ? json(values.input, "--input") : undefined;
    const payload = verb === "signal" ? json(values.payload, "--payload") : undefined;
    const [a, b, ...rest] = positionals;
    const arity = { list: 0, show: 1, start: 1, signal: 2, cancel: 1, wake: 1 }[verb] ?? 0;
    if (positionals.length !== arity || rest.length > 0) throw new CliUsageError(`runs ${verb} takes ${arity === 0 ? "no arguments" : arity === 1 ? "one argument" : "two arguments"}\n${help}`);
    const journal = await openJournal(target, needsCode ? await loadWorkflows(values.workflows ?? []) : []);
    try {
      const { client } = journal;
      switch (verb) {
        case "list": {
          if (values.status !== undefined && !STATUSES.has(values.status)) throw new CliUsageError(`unknown status "${values.status}"`);
          const limit = values.limit === undefined ? 50 : Number(values.limit);
          if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new CliUsageError("--limit must be an integer from 1 to 1000");
          const page = await client.list({ limit, ...(values.status ? { status: values.status as RunStatus } : {}), ...(values.cursor ? { cursor: values.cursor } : {}) });
          if (values.json) {
            out(JSON.stringify(page, null, 2));
            return 0;
          }
          if (page.runs.length === 0) out("no runs");
          else out(listRow("RUN ID", "WORKFLOW", "STATUS", "UPDATED".padEnd(24), "DETAIL"));
          for (const r of page.runs) {
            const detail = r.status === "suspended" || r.status === "queued" ? (r.waitingFor ?? "") : r.error ? `${r.error.name}: ${r.error.message}` : "";
            out(listRow(r.runId, r.workflow, r.status, new Date(r.updatedAt).toISOString(), detail));
          }
          if (page.cursor) out(`more: --cursor ${page.cursor}`);
          return 0;
        }
        case "show": {
          const history = await client.history(a ?? "");
          out(values.json ? JSON.stringify(history, null, 2) : formatTimeline(history.run, history.entries));
          return 0;
        }
        case "start": {
          const runId = values["run-id"];
          if (!runId) throw new CliUsageError("runs start needs --run-id <id>");
          const started = await client.start(a ?? "", { runId, input });
          out(JSON.stringify({ runId, workflow: started.run.workflow, created: started.created, status: started.run.status }));
          if (journal.note) err(`note: ${journal.note}`);
          return 0;
        }
        case "signal": {
          const refused = values["wait-id"] || values.buffer ? undefined : await decidedWait(client, a ?? "", b ?? "", values["signal-id"]);
          if (refused) {
            err(`waymark: ${refused.name}: ${refused.message}; nothing was sent\n  to keep it for a later "${b}" wait of this run instead, pass --buffer`);
            return 1;
          }
          const receipt = await client.signal(a ?? "", b ?? "", payload, { ...(values["wait-id"] ? { waitId: values["wait-id"] } : {}), ...(values["signal-id"] ? { signalId: values["signal-id"] } : {}) });
          out(JSON.stringify({ runId: a, ...receipt }));
          if (journal.note && receipt.status === "delivered") err(`note: ${journal.note}`);
          return 0;
        }
        case "wake": {
          const { woken } = await client.wake(a ?? "", values.step === undefined ? {} : { stepId: values.step });
          if (woken.length === 0) {
            const run = await client.get(a ?? "");
            err(`waymark: run ${a} is not asleep${values.step === undefined ? "" : ` at ${values.step}`} (it is ${run.status}${run.waitingFor ? `, waiting for ${run.waitingFor}` : ""}); nothing changed`);
            return 1;
          }
          out(JSON.stringify({ runId: a, woken }));
          if (journal.note) err(`note: ${journal.note}`);
          return 0;
        }
        default: {
          const answer = await client.cancel(a ?? "", values.reason === undefined ? {} : { reason: values.reason });
          if (answer.outcome === "already-ended") {
            err(`waymark: run ${a} had already finished (${answer.status}); nothing changed`);
            return 1;
          }
          // A run that never started ends at once; any other ends after its compensations run.
          out(JSON.stringify({ runId: a, outcome: answer.outcome, status: answer.outcome === "cancelled" ? "cancelled" : "cancelling" }));
          if (answer.outcome === "requested" && journal.note) err(`note: ${journal.note}`);
          return 0;
        }
      }
    } finally {
      await journal.close();
    }
  } catch (e) {
    if (e instanceof CliUsageError || (e as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")) {
      err(`waymark: ${(e as Error).message}\nusage: ${help.split("\n")[0]}`);
      return 2;
    }
    if (e instanceof JournalUnreachableError) {
      err(`waymark: ${e.message}`);
      return 3;
    }
    if (e instanceof WaymarkError) {
      const issues = (e as { issues?: ReadonlyArray<{ path: string; message: string }> }).issues;
      err(`waymark: ${e.name}: ${e.message}${issues?.length ? `\n${issues.map((i) => `  ${i.path || "(value)"}: ${i.message}`).join("\n")}` : ""}`);
      return 1;
    }
    const explained = explainAccessError(e, target);
    if (explained) {
      err(`waymark: ${explained}`);
      return 3;
    }
    throw e;
  }
}

/** One line of `runs list`: the header and every run share the columns. */
function listRow(runId: string, workflow: string, status: string, updated: string, detail: string): string {
  return `${runId.padEnd(24)} ${workflow.padEnd(16)} ${status.padEnd(10)} ${updated}  ${detail}`.trimEnd();
}

function json(text: string | undefined, flag: string): unknown {
  if (text === undefined) throw new CliUsageError(`${flag} '<json>' is required`);
  try {
    return JSON.parse(text);
  } catch {
    throw new CliUsageError(`${flag} is not valid JSON`);
  }
}
