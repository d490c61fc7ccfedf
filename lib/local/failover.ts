/**
 * Failover between the local workers of one journal file: a run whose lease a dead process holds,
 * and a run that is due with nobody to wake it, get a wake now, not at the next watchdog tick.
 *
 * What makes a worker look (`recover()`):
 *   - its own start (before `LocalRuntime.start()` resolves: `ready` means ready);
 *   - a peer's connection ending (peer-mesh.ts): a process died;
 *   - the earliest lease held by a live peer expiring (a frozen or unreachable owner): a timer;
 *   - the scan tick (the watchdog's interval, at most half the lease TTL), as a backstop.
 *
 * What it wakes, most urgent first (the wake table hands out wakes by their time):
 *   - runs leased by a dead owner (owner-life.ts), ahead of every other wake (time 0): they were
 *     in the middle of a step, and finishing started work beats starting more;
 *   - stranded runs: due, with no live lease and no visible wake (a wake claimed by a worker that
 *     died before it took the lease, an expired lease, a lost wake), at the time they fell due.
 * A run due with a visible wake is left to the queue: a second wake would only replay it twice.
 */
import type { Statement } from "better-sqlite3";
import { type RunMeta, TERMINAL_STATUSES } from "../ports.ts";
import type { LogEntry } from "../core/engine.ts";
import type { Database } from "./database.ts";
import { type OwnerLife, ownerLife } from "./owner-life.ts";
import { PeerMesh } from "./peer-mesh.ts";
import type { SqliteJournalStore } from "./sqlite-store.ts";
import type { SqliteWakeTable } from "./wake-table.ts";

/** A run that is not running but due this long ago with no wake is stranded (younger: its wake may be about to be written). */
const STRANDED_GRACE_MS = 250;
/** How long a peer whose connection ended may still look alive (exiting, not yet reaped) before it is taken for a peer that merely left. */
const DEATH_SETTLE_MS = 2_000;
const DEATH_RECHECK_MS = 20;
const DUE_LIMIT = 1_000;
/** The key of the wakes a look schedules (one per run: a later look's replaces an earlier one's). */
const RECOVER_KEY = "recover";
/** The wake time of a dead owner's run: before any other, so it is claimed first. */
const INTERRUPTED_AT = 0;

export interface FailoverOptions {
  journal: string;
  db: Database;
  store: SqliteJournalStore;
  wakes: SqliteWakeTable;
  /** This runtime's lease owner prefix (its own leases are never touched). */
  owner: string;
  /** How often to look anyway. */
  scanIntervalMs: number;
  log?: (entry: LogEntry) => void;
}

/** What one look found and did. */
export interface RecoveryReport {
  /** Runs of dead owners woken. */
  deadOwners: number;
  /** Stranded runs woken. */
  stranded: number;
}

/**
 * The failover watch of one local runtime.
 *
 * @example
 * ```ts
 * const failover = new LocalFailover({ journal, db, store, wakes, owner, scanIntervalMs: 5_000 });
 * await failover.start(); // recovered: dead owners' and stranded runs have their wakes
 * // …
 * await failover.stop();
 * ```
 */
export class LocalFailover {
  private readonly mesh: PeerMesh | undefined;
  private readonly visibleWake: Statement<[string, number], number>;
  private readonly waitingRecovery: Statement<[string, number], number>;
  private scanning: Promise<RecoveryReport> | undefined;
  private again = false;
  private lookTimer: NodeJS.Timeout | undefined;
  private nextLookAt = Number.POSITIVE_INFINITY;
  private tick: NodeJS.Timeout | undefined;
  private recheck: NodeJS.Timeout | undefined;
  /** Peers whose connection ended, until their process is seen dead (or DEATH_SETTLE_MS passed). */
  private readonly departed = new Map<string, number>();
  private stopped = false;

  constructor(private readonly o: FailoverOptions) {
    this.mesh = PeerMesh.supported(o.journal) ? new PeerMesh({ journal: o.journal, owner: o.owner, onPeerGone: (peer) => this.peerGone(peer) }) : undefined;
    this.visibleWake = o.db.prepare<[string, number], number>("SELECT 1 FROM wakes WHERE run_id = ? AND visible_at <= ? LIMIT 1").pluck();
    this.waitingRecovery = o.db.prepare<[string, number], number>(`SELECT 1 FROM wakes WHERE run_id = ? AND key = '${RECOVER_KEY}' AND visible_at <= ?`).pluck();
  }

  /** Joins the mesh, then wakes what start-up recovery finds. Resolves once those wakes are written. */
  async start(): Promise<RecoveryReport> {
    try {
      await this.mesh?.open();
    } catch (err) {
      // Without the mesh, deaths are found at the scan tick and leases when they expire.
      this.o.log?.({ event: "failover", runId: "", outcome: "no-mesh", dir: this.mesh?.dir, error: String(err) });
    }
    this.tick = setInterval(() => {
      void this.mesh?.connectAll();
      void this.recover().catch(() => {});
    }, this.o.scanIntervalMs);
    this.tick.unref();
    return this.recover();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.tick);
    clearTimeout(this.lookTimer);
    clearTimeout(this.recheck);
    await this.mesh?.close();
    await this.scanning?.catch(() => {});
  }

  /** Looks now (one look at a time; a call during a look makes one more afterwards). */
  recover(): Promise<RecoveryReport> {
    if (this.scanning) {
      this.again = true;
      return this.scanning;
    }
    const run = async (): Promise<RecoveryReport> => {
      try {
        let report: RecoveryReport;
        do {
          this.again = false;
          report = await this.look();
        } while (this.again && !this.stopped);
        return report;
      } finally {
        this.scanning = undefined;
      }
    };
    this.scanning = run();
    return this.scanning;
  }

  private peerGone(owner: string | undefined): void {
    if (this.stopped) return;
    if (owner) this.departed.set(owner, Date.now());
    void this.recover().catch(() => {});
  }

  private async look(): Promise<RecoveryReport> {
    const now = Date.now();
    const report: RecoveryReport = { deadOwners: 0, stranded: 0 };
    let nextExpiry = Number.POSITIVE_INFINITY;
    const stillAlive = new Set<string>();
    // One check per owner process per look, however many runs it holds.
    const lives = new Map<string, OwnerLife>();
    const lifeOf = (owner: string): OwnerLife => {
      const runtime = owner.slice(0, owner.lastIndexOf(":"));
      let life = lives.get(runtime);
      if (life === undefined) lives.set(runtime, (life = ownerLife(owner)));
      return life;
    };
    let cursor: string | undefined;
    do {
      const page = await this.o.store.listRuns({ status: "running", ...(cursor ? { cursor } : {}) });
      for (const run of page.runs) {
        const lease = run.lease;
        if (!lease || lease.owner.startsWith(`${this.o.owner}:`)) continue;
        if (lifeOf(lease.owner) === "dead") {
          // Unless an earlier look's wake is still waiting to be claimed (a claimed one may be a dead claimer's).
          // The run's other wakes do not count: they wait their turn behind the backlog.
          if (this.waitingRecovery.get(run.runId, now) === undefined) {
            await this.wake(run, INTERRUPTED_AT, "dead-owner");
            report.deadOwners++;
          }
          continue;
        }
        for (const peer of this.departed.keys()) if (lease.owner.startsWith(`${peer}:`)) stillAlive.add(peer);
        if (lease.expiresAt > now) nextExpiry = Math.min(nextExpiry, lease.expiresAt);
      }
      cursor = page.cursor;
    } while (cursor);

    let nextLook = nextExpiry + 1;
    for (const run of await this.o.store.listDueRuns(now, DUE_LIMIT)) {
      if (TERMINAL_STATUSES.has(run.status) || run.wakeAt === undefined) continue;
      if (run.lease !== undefined && run.lease.expiresAt > now) continue;
      if (this.visibleWake.get(run.runId, now) !== undefined) continue;
      if (run.status !== "running" && run.wakeAt > now - STRANDED_GRACE_MS) {
        nextLook = Math.min(nextLook, run.wakeAt + STRANDED_GRACE_MS);
        continue;
      }
      await this.wake(run, run.wakeAt, "stranded");
      report.stranded++;
    }

    this.lookAt(nextLook);
    this.settleDeparted(stillAlive, now);
    return report;
  }

  private async wake(run: RunMeta, at: number, cause: "dead-owner" | "stranded"): Promise<void> {
    await this.o.wakes.schedule({ runId: run.runId, at, reason: "watchdog", key: RECOVER_KEY });
    this.o.log?.({ level: "warn", event: "recover", runId: run.runId, cause, status: run.status, ...(run.lease ? { owner: run.lease.owner } : {}) });
  }

  /**
   * A timer for the next moment something may become stranded: the earliest lease a live peer
   * holds (not renewed by then, its run is woken), or a due run's grace running out.
   */
  private lookAt(at: number): void {
    if (this.stopped || at === this.nextLookAt) return;
    clearTimeout(this.lookTimer);
    this.nextLookAt = at;
    if (!Number.isFinite(at)) return;
    this.lookTimer = setTimeout(() => {
      this.nextLookAt = Number.POSITIVE_INFINITY;
      void this.recover().catch(() => {});
    }, Math.max(0, at - Date.now()));
    this.lookTimer.unref();
  }

  /** A departed peer still holding leases and not yet seen dead is looked at again shortly (its exit may be under way). */
  private settleDeparted(stillAlive: ReadonlySet<string>, now: number): void {
    for (const [peer, since] of this.departed) {
      if (!stillAlive.has(peer) || now - since > DEATH_SETTLE_MS) this.departed.delete(peer);
    }
    if (this.departed.size > 0 && !this.stopped) {
      clearTimeout(this.recheck);
      this.recheck = setTimeout(() => void this.recover().catch(() => {}), DEATH_RECHECK_MS);
      this.recheck.unref();
    }
  }
}
