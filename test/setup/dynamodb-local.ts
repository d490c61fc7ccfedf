/**
 * DynamoDB Local for the tests: fetched once, started per test run.
 *
 * The jar ships in the npm package `amplify-dynamodb-simulator`, whose own dependency tree is
 * large (about 280 packages, ~20 s of a cold install). We take only its `emulator/` folder:
 * `npm pack` the pinned version into `node_modules/.cache/waymark-dynamodb-local/`, check the
 * tarball against its pinned integrity, unpack `emulator/`, and mark the folder complete. This
 * runs once per checkout (about 2 s cold), idempotently, under a lock when two processes race.
 * `npm ci` wipes `node_modules`, so a fresh clone fetches it again at its first `npm test`.
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, rmSync, renameSync, writeFileSync, statSync } from "node:fs";
import { createServer } from "node:net";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { DynamoDBClient, ListTablesCommand } from "@aws-sdk/client-dynamodb";
import { LOCAL_CREDENTIALS, LOCAL_REGION } from "./local-aws.ts";

const run = promisify(execFile);

export const SIMULATOR_PACKAGE = "amplify-dynamodb-simulator";
export const SIMULATOR_VERSION = "2.9.30";
/** `npm view amplify-dynamodb-simulator@2.9.30 dist.integrity` */
const SIMULATOR_INTEGRITY = "sha512-xTeeRLvzEfqyd5lh3bH4c0kHvSHHmmhD5ZDsHFKAQ5g2Zl6JqlFdutaQhCLHzxEp6Ry1o7TB6niIoXuQAnSewQ==";

const CACHE_ROOT = resolve(import.meta.dirname, "../../node_modules/.cache/waymark-dynamodb-local");
const LOCK_STALE_MS = 5 * 60_000;

/** The folder holding `DynamoDBLocal.jar`, fetching it first if needed. */
export async function ensureDynamoDbLocal(cacheRoot = CACHE_ROOT): Promise<string> {
  const home = join(cacheRoot, SIMULATOR_VERSION);
  const emulator = join(home, "emulator");
  const done = join(home, "complete");
  if (existsSync(done)) return emulator;
  mkdirSync(home, { recursive: true });
  const release = await lock(join(home, "lock"));
  try {
    if (existsSync(done)) return emulator; // another process fetched it while we waited
    const work = join(home, `work-${process.pid}`);
    rmSync(work, { recursive: true, force: true });
    mkdirSync(work);
    const { stdout } = await run("npm", ["pack", `${SIMULATOR_PACKAGE}@${SIMULATOR_VERSION}`, "--pack-destination", work, "--json", "--silent"], {
      maxBuffer: 64 * 1024 * 1024,
    });
    const packed = (JSON.parse(stdout) as Array<{ filename: string }>)[0];
    if (!packed) throw new Error(`npm pack ${SIMULATOR_PACKAGE} printed no file name`);
    const tarball = join(work, packed.filename);
    const integrity = `sha512-${createHash("sha512").update(readFileSync(tarball)).digest("base64")}`;
    if (integrity !== SIMULATOR_INTEGRITY) throw new Error(`${SIMULATOR_PACKAGE}@${SIMULATOR_VERSION}: integrity ${integrity}, expected ${SIMULATOR_INTEGRITY}`);
    await run("tar", ["-xzf", tarball, "-C", work, "package/emulator"]);
    rmSync(emulator, { recursive: true, force: true });
    renameSync(join(work, "package/emulator"), emulator);
    rmSync(work, { recursive: true, force: true });
    writeFileSync(done, `${SIMULATOR_PACKAGE}@${SIMULATOR_VERSION}\n`);
    return emulator;
  } finally {
    release();
  }
}

/**
 * A lock directory (mkdir is atomic) holding its owner's pid. A lock whose owner is gone, or
 * older than the longest fetch, is stale and broken.
 */
async function lock(path: string): Promise<() => void> {
  const deadline = Date.now() + LOCK_STALE_MS + 60_000;
  for (;;) {
    try {
      mkdirSync(path);
      writeFileSync(join(path, "pid"), String(process.pid));
      return () => rmSync(path, { recursive: true, force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
    const age = ageMs(path);
    if (age !== undefined && (age > LOCK_STALE_MS || (age > 2_000 && !ownerAlive(path)))) rmSync(path, { recursive: true, force: true });
    if (Date.now() > deadline) throw new Error(`timed out waiting for the lock ${path}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

function ownerAlive(lockPath: string): boolean {
  let pid: number;
  try {
    pid = Number(readFileSync(join(lockPath, "pid"), "utf8"));
  } catch {
    return true; // the owner has not written its pid yet
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

function ageMs(path: string): number | undefined {
  try {
    return Date.now() - statSync(path).mtimeMs;
  } catch {
    return undefined;
  }
}

export interface RunningDynamoDb {
  endpoint: string;
  stop(): Promise<void>;
}

/** Starts DynamoDB Local in memory on a free port; resolves once it answers `ListTables`. */
export async function startDynamoDbLocal(options: { deadlineMs?: number } = {}): Promise<RunningDynamoDb> {
  const dir = await ensureDynamoDbLocal();
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const child = spawn("java", ["-Djava.library.path=./DynamoDBLocal_lib", "-jar", "DynamoDBLocal.jar", "-inMemory", "-disableTelemetry", "-port", String(port)], {
      cwd: dir,
      stdio: ["ignore", "pipe", "pipe"],
    });
    const endpoint = `http://127.0.0.1:${port}`;
    try {
      await waitReady(child, endpoint, options.deadlineMs ?? 30_000);
      return { endpoint, stop: () => stop(child) };
    } catch (err) {
      lastError = err;
      await stop(child);
    }
  }
  throw lastError;
}

async function waitReady(child: ChildProcess, endpoint: string, deadlineMs: number): Promise<void> {
  let output = "";
  const keep = (d: Buffer): void => {
    if (output.length < 64 * 1024) output += d.toString();
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  let exited: string | undefined;
  child.once("error", (err) => (exited = `could not start java (${err.message}); DynamoDB Local needs Java 17 on PATH`));
  child.once("exit", (code, signal) => (exited ??= `exited with ${code ?? signal}`));
  const client = new DynamoDBClient({ endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS, maxAttempts: 1 });
  const deadline = Date.now() + deadlineMs;
  try {
    for (;;) {
      if (exited) throw new Error(`DynamoDB Local ${exited}:\n${output}`);
      try {
        await client.send(new ListTablesCommand({}), { abortSignal: AbortSignal.timeout(2_000) });
        return;
      } catch (err) {
        if (Date.now() > deadline) throw new Error(`DynamoDB Local did not answer ListTables within ${deadlineMs} ms: ${String(err)}\n${output}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    client.destroy();
  }
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
  await exited;
  clearTimeout(timer);
}

/** A port the OS just handed out; the caller retries if someone takes it first. */
export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolvePort(port));
    });
  });
}
