/**
 * What the package scripts (consumer.ts, create.ts, node-versions.ts) share: commands whose
 * failure fails a step, steps that print their time, long-running children (`waymark dev`)
 * stopped by their process group, and the summary that sets the exit code.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { get } from "node:http";
import { createRequire } from "node:module";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const repo = fileURLToPath(new URL("../../", import.meta.url));
const requireFromRepo = createRequire(join(repo, "package.json"));

/** The version of a package the repository tests with, so fresh projects are pinned to the same. */
export function version(name: string): string {
  return (requireFromRepo(`${name}/package.json`) as { version: string }).version;
}

const results: Array<{ name: string; ok: boolean }> = [];

/**
 * The environment of a fresh project's commands: this process's, without what `npm run` adds
 * for the repository (its `node_modules/.bin` on PATH, its package's fields, its prefix), so
 * nothing in a project resolves to the repository.
 */
export function outsideEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^npm_(package|lifecycle)_/.test(key) || key === "npm_config_local_prefix" || key === "INIT_CWD") continue;
    env[key] = value;
  }
  env.PATH = (process.env.PATH ?? "").split(":").filter((p) => !p.startsWith(repo) && !p.startsWith(repo.replace(/\/$/, ""))).join(":");
  return { ...env, ...extra };
}

export function sh(cwd: string, command: string, args: string[], env: NodeJS.ProcessEnv = {}): string {
  return execFileSync(command, args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], env: outsideEnv(env), maxBuffer: 64 * 1024 * 1024 });
}

/** Runs one step; its failure is recorded and printed (the last lines of the child's output), and the next step runs. */
export async function step(name: string, run: () => string | void | Promise<string | void>): Promise<boolean> {
  const started = Date.now();
  process.stdout.write(`- ${name} … `);
  try {
    const out = await run();
    results.push({ name, ok: true });
    console.log(`ok (${((Date.now() - started) / 1000).toFixed(1)} s)`);
    if (out && out.trim()) console.log(out.trim().replace(/^/gm, "    "));
    return true;
  } catch (err) {
    results.push({ name, ok: false });
    console.log(`FAILED (${((Date.now() - started) / 1000).toFixed(1)} s)`);
    // A child's stderr (a compiler's errors, a stack) is kept to its last lines: minified
    // dependencies print whole files in a stack trace.
    const e = err as { stdout?: string; stderr?: string; message?: string };
    const tail = (text: string) => text.trim().split("\n").slice(-40).map((l) => l.slice(0, 400)).join("\n");
    console.log(tail(String(e.stdout ?? "")).replace(/^/gm, "    "));
    console.log(tail(String(e.stderr ?? "")).replace(/^/gm, "    "));
    console.log(String(e.message ?? err).split("\n")[0]?.replace(/^/gm, "    "));
    return false;
  }
}

export function expectThat(condition: boolean, message: string): void {
  if (!condition) throw new Error(message);
}

/** Prints the tally and sets the exit code: 0 only when every step passed. */
export function summary(label: string): void {
  const failed = results.filter((r) => !r.ok).length;
  console.log(`\n${label}: ${results.length - failed} passed, ${failed} failed`);
  process.exitCode = failed === 0 && results.length > 0 ? 0 : 1;
}

/** A server process (`waymark dev`) in its own process group, as a terminal runs it, so that Ctrl-C reaches npm and what it started. */
export interface Served {
  child: ChildProcess;
  output(): string;
  /**
   * Ctrl-C (SIGINT to the group), then waits until every process of the group is gone. Resolves
   * to how the command ended: npm, interrupted, ends by the signal once its child has exited.
   */
  stop(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export function serve(cwd: string, command: string, args: string[], env: NodeJS.ProcessEnv = {}): Served {
  const child = spawn(command, args, { cwd, stdio: ["ignore", "pipe", "pipe"], detached: true, env: outsideEnv(env) });
  let output = "";
  child.stdout?.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr?.on("data", (d: Buffer) => (output += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on("close", (code, signal) => resolve({ code, signal })));
  const group = child.pid;
  const alive = () => {
    if (group === undefined) return false;
    try {
      process.kill(-group, 0);
      return true;
    } catch {
      return false;
    }
  };
  return {
    child,
    output: () => output,
    stop: async () => {
      if (alive() && group !== undefined) process.kill(-group, "SIGINT");
      const deadline = setTimeout(() => alive() && group !== undefined && process.kill(-group, "SIGKILL"), 30_000);
      try {
        const ended = await exited;
        await until("every process of the group to exit", () => (alive() ? undefined : true), 30_000);
        return ended;
      } finally {
        clearTimeout(deadline);
      }
    },
  };
}

/** Waits for `check` to return a value, polling, until a generous deadline. */
export async function until<T>(what: string, check: () => T | undefined | Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** `waymark dev` is up: the dashboard URL it printed. Fails at once if the server exited. */
export async function dashboardUrl(server: Served): Promise<string> {
  return until("the dashboard URL from waymark dev", () => {
    if (server.child.exitCode !== null) throw new Error(`waymark dev exited with ${server.child.exitCode}:\n${server.output()}`);
    return /dashboard: (http:\/\/\S+?)\/?$/m.exec(server.output())?.[1];
  });
}

/**
 * GET over a connection of its own. fetch() keeps connections alive between requests, and a
 * request sent on one the server is closing at that moment (its keep-alive timeout, 5 s, while
 * a CLI command runs in between) fails with "other side closed"; a browser retries such a GET,
 * fetch does not.
 */
export function httpGet(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    get(url, { agent: false }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (body += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      res.on("error", reject);
    }).on("error", reject);
  });
}
