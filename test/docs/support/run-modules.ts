/**
 * The child process in which the samples test executes the docs' module samples, one after the
 * other: `node --conditions=waymark-source --import tsx run-modules.ts <plan.json> <report.json>`.
 * Each module is imported with its page's folder as the working directory and what it prints
 * with `console.log` captured; a `body` sample's workflow is then run on the test runtime to its
 * end; a `serves` module must answer `GET /` on `process.env.PORT` once imported. The report says
 * what each printed and how it failed; the process then exits, stopping any server.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { pathToFileURL } from "node:url";
import { format } from "node:util";
import type { AnyWorkflow } from "waymark";
import { createTestRuntime } from "waymark/testing";

export interface PlannedModule {
  path: string;
  cwd: string;
  body: boolean;
  serves: boolean;
}

export interface ModuleReport {
  path: string;
  printed: string[];
  error: string | undefined;
}

async function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once("error", fail);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address ? done(address.port) : fail(new Error("no port"))));
    });
  });
}

async function answers(port: number): Promise<string | undefined> {
  // The module's import has finished (its `await startDevServer(…)`): the server listens by now.
  const deadline = Date.now() + 10_000;
  let last = "";
  while (Date.now() < deadline) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/`);
      if (res.status < 500) return undefined;
      last = `answered ${res.status}`;
    } catch (err) {
      last = String(err);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return `serves nothing on port ${port} (GET /: ${last})`;
}

async function runBody(mod: Record<string, unknown>): Promise<string | undefined> {
  const sample = mod.sample as AnyWorkflow;
  const rt = createTestRuntime({ workflows: [sample], webhook: { secret: "docs-samples-webhook-secret-0123456789", baseUrl: "http://127.0.0.1:8787" } });
  await rt.start(sample, { runId: "sample", input: {} });
  await rt.advance("30d");
  const run = await rt.get("sample");
  return run.status === "completed" ? undefined : `the body's run ended ${run.status}: ${JSON.stringify(run.error ?? run)}`;
}

const [planPath = "", reportPath = ""] = process.argv.slice(2);
const plan = JSON.parse(readFileSync(planPath, "utf8")) as PlannedModule[];
const reports: ModuleReport[] = [];
const log = console.log;
let current: ModuleReport | undefined;
const late = (err: unknown) => {
  const text = err instanceof Error ? (err.stack ?? err.message) : String(err);
  if (current) current.error ??= `threw after its import: ${text}`;
};
process.on("unhandledRejection", late);
process.on("uncaughtException", late);
const MODULE_DEADLINE_MS = 180_000;
function withDeadline<T>(work: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, fail) => {
    timer = setTimeout(() => fail(new Error(`${what} did not finish in ${MODULE_DEADLINE_MS / 1000} s`)), MODULE_DEADLINE_MS);
  });
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer));
}
for (const m of plan) {
  const report: ModuleReport = { path: m.path, printed: [], error: undefined };
  reports.push(report);
  current = report;
  process.chdir(m.cwd);
  // One line per call: util.inspect breaks a long object over lines, the sample shows it on one.
  console.log = (...args: unknown[]) => void report.printed.push(format(...args).replace(/\s*\n\s*/g, " "));
  try {
    if (m.serves) process.env.PORT = String(await freePort());
    const mod = (await withDeadline(import(pathToFileURL(m.path).href), "its import")) as Record<string, unknown>;
    if (m.body) report.error = await withDeadline(runBody(mod), "its run");
    if (m.serves) report.error = await answers(Number(process.env.PORT));
  } catch (err) {
    report.error = `threw: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`;
  } finally {
    console.log = log;
    delete process.env.PORT;
  }
}
current = undefined;
writeFileSync(reportPath, JSON.stringify(reports));
process.exit(0);
