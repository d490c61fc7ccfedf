/**
 * The wake ports: what asks for a run's next invocation, and the queues a host polls itself (part of
 * the ports, `lib/ports.ts`).
 */
/** Why a run is woken. */
export type WakeReason = "start" | "sleep" | "timeout" | "retry" | "signal" | "continue" | "watchdog" | "cancel";

/** A request to invoke a run at a time. */
export interface Wake {
  runId: string;
  /** Epoch ms; now or earlier means at once. */
  at: number;
  reason: WakeReason;
  /**
   * Deterministic name within the run (e.g. `timeout:approval`), so scheduling twice creates one
   * wake and a resolved wait can cancel its timeout.
   */
  key: string;
  /** W3C trace context of the invocation (or caller) that scheduled it, when tracing is on. */
  traceparent?: string;
}

/** Delivers wakes: the SQLite wake table locally; SQS delays and the Scheduler on AWS. */
export interface WakeQueue {
  schedule(wake: Wake): Promise<void>;
  /** Best effort: an early or extra wake is harmless, it re-checks the journal. */
  cancel(runId: string, key: string): Promise<void>;
}

/** A wake claimed from a pollable queue; `ack` it once the invocation is done. */
export interface ClaimedWake extends Wake {
  /** Changes whenever the wake is rescheduled, so acking an old claim keeps the new wake. */
  generation: number;
}

/**
 * A wake queue that its own host polls (the SQLite wake table, the in-memory test queue).
 * Claiming hides a wake for `visibilityMs`, as SQS does: a host that dies mid-invocation
 * leaves it to reappear, so no wake is lost to a crash.
 */
export interface PollableWakeQueue extends WakeQueue {
  claimDue(now: number, limit: number, visibilityMs: number): Promise<ClaimedWake[]>;
  /** Deletes the wake if it was not rescheduled since it was claimed. */
  ack(wake: ClaimedWake): Promise<void>;
  /** When the next wake becomes visible, if any. */
  nextDueAt(): Promise<number | undefined>;
}
