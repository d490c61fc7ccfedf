/**
 * The peers' servers, throwaway and on loopback only: a PostgreSQL cluster for DBOS (initdb and
 * pg_ctl in a temp dir, default settings, as the `postgres` user when this runs as root, since
 * PostgreSQL refuses root) and a Restate server with its data in a temp dir.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";

export interface Service {
  /** What the workers connect to. */
  urls: Record<string, string>;
  describe: string;
  stop(): Promise<void>;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port"))));
    });
  });
}

function run(cmd: string, args: string[], asUser: string | undefined): string {
  const [file, argv] = asUser ? ["runuser", ["-u", asUser, "--", cmd, ...args]] : [cmd, args];
  const out = spawnSync(file, argv, { encoding: "utf8" });
  if (out.status !== 0) throw new Error(`${[file, ...argv].join(" ")} failed (${out.status ?? out.signal}): ${(out.stderr || out.stdout || String(out.error)).trim()}`);
  return out.stdout;
}

/** The newest installed PostgreSQL's bin dir (Debian puts them under /usr/lib/postgresql/N/bin), or $WAYMARK_PEERS_PG_BIN. */
function postgresBin(): string {
  if (process.env.WAYMARK_PEERS_PG_BIN) return process.env.WAYMARK_PEERS_PG_BIN;
  const root = "/usr/lib/postgresql";
  const versions = existsSync(root) ? readdirSync(root).filter((v) => existsSync(join(root, v, "bin", "initdb"))).sort((a, b) => Number(b) - Number(a)) : [];
  if (versions.length === 0) throw new Error(`no PostgreSQL found: no ${root}/N/bin/initdb (apt-get install postgresql, or set WAYMARK_PEERS_PG_BIN)`);
  return join(root, versions[0]!, "bin");
}

export async function startPostgres(): Promise<Service> {
  const bin = postgresBin();
  const asUser = process.getuid?.() === 0 ? "postgres" : undefined;
  const dir = mkdtempSync(join(tmpdir(), "waymark-peers-pg-"));
  if (asUser) {
    const ids = spawnSync("id", ["-u", asUser], { encoding: "utf8" });
    const gids = spawnSync("id", ["-g", asUser], { encoding: "utf8" });
    if (ids.status !== 0) throw new Error(`running as root and there is no '${asUser}' user to run PostgreSQL as`);
    chownSync(dir, Number(ids.stdout), Number(gids.stdout));
  }
  const port = await freePort();
  const data = join(dir, "data");
  try {
    run(join(bin, "initdb"), ["-D", data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync"], asUser);
    run(join(bin, "pg_ctl"), ["-D", data, "-l", join(dir, "log"), "-w", "-o", `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1`, "start"], asUser);
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  const version = run(join(bin, "postgres"), ["--version"], undefined).trim();
  return {
    urls: { url: `postgresql://postgres@127.0.0.1:${port}/waymark_peers`, server: `${version}, 127.0.0.1:${port}` },
    describe: `${version} on 127.0.0.1:${port} (defaults: fsync on, synchronous_commit on)${asUser ? `, run as ${asUser}` : ` as ${userInfo().username}`}`,
    stop: async () => {
      try {
        run(join(bin, "pg_ctl"), ["-D", data, "-m", "fast", "-w", "stop"], asUser);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

async function until(what: string, ms: number, ok: () => Promise<boolean>, log: string): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await ok().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`${what} not up after ${ms} ms; its log ends:\n${tail(log)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function tail(file: string): string {
  return existsSync(file) ? readFileSync(file, "utf8").slice(-3000) : "(no log)";
}

export async function startRestate(binary: string): Promise<Service> {
  if (!existsSync(binary)) throw new Error(`no Restate server binary at ${binary}`);
  const dir = mkdtempSync(join(tmpdir(), "waymark-peers-restate-"));
  const [fabric, ingress, admin] = [await freePort(), await freePort(), await freePort()];
  // Defaults but for the ports, telemetry and the web UI; the log (Bifrost) and the partition
  // store keep their RocksDB WAL with fsync, as shipped.
  writeFileSync(
    join(dir, "restate.toml"),
    [
      "disable-telemetry = true",
      `bind-address = "127.0.0.1:${fabric}"`,
      `advertised-address = "http://127.0.0.1:${fabric}/"`,
      "[ingress]",
      `bind-address = "127.0.0.1:${ingress}"`,
      "[admin]",
      `bind-address = "127.0.0.1:${admin}"`,
      "disable-web-ui = true",
      "",
    ].join("\n"),
  );
  const log = join(dir, "restate.log");
  const out = openSync(log, "a");
  const child: ChildProcess = spawn(binary, ["--config-file", join(dir, "restate.toml"), "--base-dir", join(dir, "data"), "--no-logo", "--listen-mode", "tcp"], {
    stdio: ["ignore", out, out],
    env: { ...process.env, RESTATE_LOG_FILTER: "warn", RESTATE_LOG_DISABLE_ANSI_CODES: "true" },
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const urls = { ingress: `http://127.0.0.1:${ingress}`, admin: `http://127.0.0.1:${admin}` };
  try {
    await until("restate-server", 60_000, async () => child.exitCode === null && (await fetch(`${urls.admin}/health`)).ok && (await fetch(`${urls.ingress}/restate/health`)).ok, log);
  } catch (err) {
    await stop();
    throw err;
  }
  const version = spawnSync(binary, ["--version"], { encoding: "utf8" }).stdout.trim();
  return { urls, describe: `${version}, ingress ${urls.ingress}, admin ${urls.admin} (RocksDB WAL with fsync, as shipped)`, stop };
}
