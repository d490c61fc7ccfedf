/**
 * Lease owners that other processes on this machine can check for life.
 *
 * A local runtime's owner is `local:<host>:<pid>:<start>.<world>:<id>` (the engine appends
 * `:<seq>` per invocation):
 *
 * - `start`: when the process started (field 22 of `/proc/<pid>/stat`, clock ticks since boot).
 *   A pid is reused once its process is gone; the start time tells the new process from the owner.
 * - `world`: a short hash of the kernel's boot id and the pid namespace. Another boot or another
 *   pid namespace (a container) numbers its processes differently: a pid from there says nothing
 *   here, so such an owner is never judged dead; its lease simply expires.
 * - `id`: one runtime of several in a process.
 *
 * Where `/proc` is missing (macOS), `start` and `world` are `-` and only `kill(pid, 0)` is
 * asked: a recycled pid then looks alive and the lease waits for its expiry, never the reverse.
 */
import { createHash } from "node:crypto";
import { readFileSync, readlinkSync } from "node:fs";
import { hostname } from "node:os";
import type { Lease } from "../ports.ts";

/** What a check of an owner found. `unknown`: not a process this machine can see (wait for expiry). */
export type OwnerLife = "alive" | "dead" | "unknown";

/** The kernel sets PF_EXITING as a process begins to die, before its file descriptors close. */
const PF_EXITING = 0x4;

const hostPrefix = `local:${hostname()}:`;

interface ProcStat {
  state: string;
  flags: number;
  start: string;
}

/** Fields 3 (state), 9 (flags) and 22 (start time) of `/proc/<pid>/stat`; undefined if unreadable. */
function procStat(pid: number | "self"): ProcStat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  // The command name (field 2) is in parentheses and may hold spaces or parentheses itself.
  const rest = text.slice(text.lastIndexOf(")") + 2).split(" ");
  const [state, flags, start] = [rest[0], rest[6], rest[19]];
  if (state === undefined || flags === undefined || start === undefined) return undefined;
  return { state, flags: Number(flags), start };
}

function computeWorld(): string {
  try {
    const boot = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
    const pidNamespace = readlinkSync("/proc/self/ns/pid");
    return createHash("sha256").update(`${boot} ${pidNamespace}`).digest("hex").slice(0, 8);
  } catch {
    return "-";
  }
}

const world = computeWorld();
const selfStart = (world === "-" ? undefined : procStat("self")?.start) ?? "-";

/** This process's life: `<pid>:<start>.<world>`. */
export function selfLife(): string {
  return `${process.pid}:${selfStart}.${world}`;
}

/**
 * A new owner name for a runtime in this process.
 *
 * @example
 * ```ts
 * const owner = localOwner(); // "local:laptop:4711:123456.9f3a2b1c:5e0c1d2a"
 * ```
 */
export function localOwner(): string {
  return `${hostPrefix}${selfLife()}:${globalThis.crypto.randomUUID().slice(0, 8)}`;
}

interface ParsedOwner {
  pid: number;
  /** Absent for owners written before start identities (`local:<host>:<pid>:<id>`). */
  start?: string;
  world?: string;
}

function parse(owner: string): ParsedOwner | undefined {
  if (!owner.startsWith(hostPrefix)) return undefined;
  const [pidText, life] = owner.slice(hostPrefix.length).split(":");
  const pid = Number(pidText);
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  const dot = life?.indexOf(".") ?? -1;
  if (life === undefined || dot < 0) return { pid };
  return { pid, start: life.slice(0, dot), world: life.slice(dot + 1) };
}

/**
 * Whether the process a lease owner names is alive, dead, or out of sight. Dead means: no such
 * process, a different process under its pid (another start time), a zombie, or one already
 * exiting. A stopped (SIGSTOP) or busy process is alive.
 *
 * @example
 * ```ts
 * if (ownerLife(run.lease.owner) === "dead") await wakes.schedule({ runId: run.runId, at: Date.now(), reason: "watchdog", key: "recover" });
 * ```
 */
export function ownerLife(owner: string): OwnerLife {
  const o = parse(owner);
  if (!o) return "unknown";
  if (o.world !== undefined && o.world !== world) return "unknown";
  if (o.pid === process.pid) return o.start === undefined || o.start === selfStart ? "alive" : "dead";
  try {
    process.kill(o.pid, 0);
  } catch (err) {
    // EPERM: it exists, under another user.
    if ((err as NodeJS.ErrnoException).code === "ESRCH") return "dead";
  }
  const stat = procStat(o.pid);
  if (!stat) return "alive";
  if (o.start !== undefined && o.start !== "-" && stat.start !== o.start) return "dead";
  if (stat.state === "Z" || stat.state === "X" || (stat.flags & PF_EXITING) !== 0) return "dead";
  return "alive";
}

/**
 * True when a lease belongs to a process on this machine that no longer exists (the engine's
 * `mayBreak`). A live owner, or one this machine cannot see, keeps its lease until it expires.
 *
 * @example
 * ```ts
 * await engine.invoke(runId, { mayBreak: isDeadLocalOwner });
 * ```
 */
export function isDeadLocalOwner(lease: Lease): boolean {
  return ownerLife(lease.owner) === "dead";
}
