/**
 * `waymark dev <module>`: hosts a module's workflows on the embedded runtime (a SQLite journal)
 * with the webhook and the dashboard on 127.0.0.1, in one process, until Ctrl-C.
 * `waymark dashboard --table <name>`: the same dashboard over a deployed journal, run locally
 * with the user's AWS credentials (nothing is deployed for it).
 */
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";
import { createApprovalLinks } from "../http/tokens.ts";
import { CliUsageError, loadWorkflows, openJournal } from "./journal.ts";

export const DEV_HELP = `waymark dev <module> [--file journal.db] [--port 8787] [--host 127.0.0.1]
  Hosts the workflows <module> exports on a local runtime, with the webhook and the dashboard.
  A .ts module needs tsx installed (npm install -D tsx). The webhook secret is $WAYMARK_WEBHOOK_SECRET,
  else one kept next to the journal (dev-secret), so approval links survive restarts.`;
export const DASHBOARD_HELP = `waymark dashboard (--table name [--queue url] | --file journal.db) [--workflows module] [--port 8788]
  The dashboard over a journal, on 127.0.0.1. With --workflows it can also start runs and answer waits.`;

export interface Hosted {
  url: string;
  close(): Promise<void>;
}

/**
 * Runs `waymark dev` or `waymark dashboard`: prints the URL, then serves until SIGINT / SIGTERM.
 *
 * @example
 * ```ts
 * process.exit(await runDevVerb(["dev", "functions/order-flow.ts"], console.log, console.error));
 * ```
 */
export async function runDevVerb(argv: string[], out: (line: string) => void, err: (line: string) => void): Promise<number> {
  const verb = argv[0];
  const help = verb === "dev" ? DEV_HELP : DASHBOARD_HELP;
  if (argv.includes("--help") || argv.includes("-h")) {
    out(help);
    return 0;
  }
  let hosted: Hosted;
  try {
    const { values, positionals } = parseArgs({
      args: argv.slice(1),
      allowPositionals: true,
      options: { file: { type: "string" }, table: { type: "string" }, queue: { type: "string" }, port: { type: "string" }, host: { type: "string" }, workflows: { type: "string", multiple: true } },
    });
    const port = values.port === undefined ? (verb === "dev" ? 8787 : 8788) : Number(values.port);
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new CliUsageError("--port must be a port number");
    const host = values.host ?? "127.0.0.1";
    if (verb === "dev") {
      if (positionals.length !== 1) throw new CliUsageError("dev takes one module: waymark dev functions/order-flow.ts");
      hosted = await startDev(positionals[0] ?? "", values.file ?? process.env.WAYMARK_FILE ?? ".waymark/journal.db", port, host, out);
    } else {
      if (positionals.length > 0) throw new CliUsageError("dashboard takes no arguments");
      if (values.table === undefined && values.file === undefined) throw new CliUsageError("dashboard needs --table <name> or --file <journal.db>");
      const journal = await openJournal({ file: values.file, table: values.table, queue: values.queue }, await loadWorkflows(values.workflows ?? []));
      const { startDevServer } = await import("../local/dev-server.ts");
      const server = await startDevServer({ runtime: journal, port, host, secret: randomBytes(32).toString("hex"), source: journal.where });
      if (journal.note) err(`note: ${journal.note}`);
      hosted = { url: server.url, close: async () => (await server.close(), await journal.close()) };
    }
  } catch (e) {
    if (e instanceof CliUsageError || (e as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")) {
      err(`waymark: ${(e as Error).message}\nusage: ${help}`);
      return 2;
    }
    if ((e as { code?: string }).code === "EADDRINUSE") {
      err(`waymark: ${(e as Error).message}: another server uses that port; pass --port <n> (0 picks a free one)`);
      return 1;
    }
    throw e;
  }
  out(`dashboard: ${hosted.url}/`);
  await new Promise<void>((resolve) => {
    process.once("SIGINT", resolve);
    process.once("SIGTERM", resolve);
  });
  await hosted.close();
  return 0;
}

async function startDev(module: string, file: string, port: number, host: string, out: (line: string) => void): Promise<Hosted> {
  const workflows = await loadWorkflows([module]);
  const secret = process.env.WAYMARK_WEBHOOK_SECRET ?? devSecret(file);
  const { createLocalRuntime } = await import("../local/runtime.ts");
  const { startDevServer } = await import("../local/dev-server.ts");
  let base: string | undefined;
  const webhook = { secret, baseUrl: () => base };
  const runtime = createLocalRuntime({ workflows, file, webhook });
  await runtime.start();
  try {
    const server = await startDevServer({ runtime, port, host, secret, links: createApprovalLinks(webhook), source: file });
    base = server.url;
    out(`waymark dev: ${workflows.map((w) => w.key).join(", ")} on ${file}`);
    out(`webhook: ${server.url}/runs, approval links ${server.url}/approvals/…`);
    return { url: server.url, close: async () => (await server.close(), await runtime.close()) };
  } catch (e) {
    await runtime.close();
    throw e;
  }
}

/** A webhook secret kept beside the journal (owner-only), so links minted before a restart still verify. */
function devSecret(journal: string): string {
  const path = join(dirname(journal), "dev-secret");
  if (existsSync(path)) return readFileSync(path, "utf8").trim();
  mkdirSync(dirname(journal), { recursive: true });
  const secret = randomBytes(32).toString("hex");
  writeFileSync(path, `${secret}\n`, { mode: 0o600 });
  return secret;
}
