/**
 * `npm create waymark@latest [directory]`: a new project with a durable workflow, its tests on
 * waymark/testing, `waymark dev` and a CDK app. The directory is asked for on a terminal when
 * it is not given; `--yes` asks nothing (CI). Dependencies are not installed: the next steps
 * are printed.
 */
import { readFileSync } from "node:fs";
import { relative } from "node:path";
import { createInterface } from "node:readline/promises";
import { parseArgs } from "node:util";
import { ScaffoldError, scaffold } from "./scaffold.ts";

const DEFAULT_DIRECTORY = "waymark-app";

const USAGE = `usage: npm create waymark@latest [directory] [-- --yes] [--waymark <range|path>]

  directory         where to create the project; its name is the package name (default ${DEFAULT_DIRECTORY})
  --yes, -y         ask nothing: take the defaults
  --waymark <spec>  the waymark dependency to write: a version range (default ^<this version>),
                    or a packed tarball or a folder, written as file:<absolute path>
  --help, -h        this text`;

/**
 * Runs the command; returns the exit code (0 created, 1 refused, 2 usage).
 *
 * @example
 * ```ts
 * process.exitCode = await main(["my-app", "--yes"]);
 * ```
 */
export async function main(argv: string[], out: (line: string) => void = console.log, err: (line: string) => void = console.error): Promise<number> {
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      allowPositionals: true,
      options: { yes: { type: "boolean", short: "y" }, waymark: { type: "string" }, help: { type: "boolean", short: "h" } },
    });
    if (values.help) {
      out(USAGE);
      return 0;
    }
    if (positionals.length > 1) throw new ScaffoldError(`one directory, not ${positionals.length}`, 2);
    const directory = positionals[0] ?? (values.yes || !process.stdin.isTTY ? DEFAULT_DIRECTORY : await ask(`Project directory (${DEFAULT_DIRECTORY}): `, DEFAULT_DIRECTORY));
    const created = scaffold({ directory, waymark: values.waymark ?? `^${ownVersion()}` });
    const where = relative(process.cwd(), created.root) || ".";
    out(`Created ${created.name} in ${created.root}: an expense-approval workflow, its tests, waymark dev and a CDK app (stack ${created.stack}).

Next:
  cd ${where}
  npm install
  npm test          # the workflow's tests, on waymark/testing
  npm run dev       # the workflow on this machine, dashboard at http://127.0.0.1:8787
  npm run synth     # the CloudFormation template, checked by cdk-nag
  npm run deploy    # to your AWS account (npx cdk bootstrap once first)`);
    return 0;
  } catch (e) {
    if (e instanceof ScaffoldError) {
      err(`create-waymark: ${e.message}${e.exitCode === 2 ? `\n${USAGE}` : ""}`);
      return e.exitCode;
    }
    if ((e as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")) {
      err(`create-waymark: ${(e as Error).message}\n${USAGE}`);
      return 2;
    }
    throw e;
  }
}

async function ask(question: string, fallback: string): Promise<string> {
  const rl = createInterface({ input: process.stdin, output: process.stdout });
  try {
    return (await rl.question(question)).trim() || fallback;
  } finally {
    rl.close();
  }
}

function ownVersion(): string {
  return (JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }).version;
}
