/**
 * The browser tests' pieces: Debian's Chromium driven by playwright-core (never a downloaded
 * browser), and `waymark dev` started as a real process, as a user would.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { type Browser, chromium } from "playwright-core";
import { until } from "../support/until.ts";

const ROOT = resolve(import.meta.dirname, "../..");

/** The system Chromium: $CHROMIUM_PATH, else `chromium` on the PATH (`apt-get install chromium`). */
export function chromiumPath(): string {
  const fromEnv = process.env.CHROMIUM_PATH;
  if (fromEnv) return fromEnv;
  for (const name of ["chromium", "chromium-browser"]) {
    try {
      return execFileSync("which", [name], { encoding: "utf8" }).trim();
    } catch {
      // try the next name
    }
  }
  throw new Error("no Chromium found: apt-get install -y chromium (or set CHROMIUM_PATH)");
}

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: chromiumPath(), args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"] });
}

export interface DevProcess {
  url: string;
  child: ChildProcess;
  output: () => string;
  stop(): Promise<void>;
}

/** `waymark dev <module>` on a fresh journal in `dir`, on a free port; resolves once it prints its URL. */
export async function startWaymarkDev(module: string, dir: string, env: Record<string, string> = {}): Promise<DevProcess> {
  mkdirSync(dir, { recursive: true });
  return startWaymark(["dev", module, "--file", join(dir, "journal.db"), "--port", "0"], env);
}

/** `waymark <args>` (`dev` or `dashboard`, with `--port 0`) as a process; resolves once it prints its dashboard URL. */
export async function startWaymark(args: string[], env: Record<string, string> = {}): Promise<DevProcess> {
  const child = spawn(process.execPath, ["--conditions=waymark-source", "--import", "tsx", join(ROOT, "bin/waymark.mjs"), ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let text = "";
  child.stdout?.on("data", (c: Buffer) => (text += c.toString()));
  child.stderr?.on("data", (c: Buffer) => (text += c.toString()));
  const url = await until(`waymark ${args[0] ?? ""} to print its URL`, () => {
    if (child.exitCode !== null) throw new Error(`waymark ${args[0] ?? ""} exited: ${text}`);
    return /dashboard: (http:\/\/\S+?)\/\n/.exec(text)?.[1];
  }, 300_000);
  return {
    url,
    child,
    output: () => text,
    stop: async () => {
      if (child.exitCode !== null) return;
      child.kill("SIGINT");
      await until("waymark to stop", () => child.exitCode !== null || child.signalCode !== null, 10_000);
    },
  };
}

/** Where screenshots go: `docs/` when WAYMARK_SCREENSHOTS=docs (to refresh the docs' screenshots), else a temp dir. */
export function screenshotPath(name: string, tmp: string): string {
  const dir = process.env.WAYMARK_SCREENSHOTS === "docs" ? join(ROOT, "docs") : tmp;
  if (!existsSync(dir)) mkdirSync(dir, { recursive: true });
  return join(dir, name);
}
