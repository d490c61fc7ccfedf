/** What an {@link Execution} is given and what it ends in. */
import type { ApprovalLinks, Timers, WakeReason } from "../ports.ts";
import type { AnyWorkflow } from "./definition.ts";
import type { ChildPort } from "./children.ts";
import type { SerializedError } from "./errors.ts";
import type { JournalView } from "./journal-view.ts";
import type { Payloads } from "./payloads.ts";
import type { JournalRecord, RunStepRecord, StepRecord, Unstamped } from "./records.ts";
import type { Transacted } from "./run/transact.ts";
import type { TxOp } from "./transact/ops.ts";

/** Something the run waits for; the earliest `wakeAt` among blockers is when to wake. */
export interface Blocker {
  stepId: string;
  wakeAt?: number;
  key: string;
  reason: WakeReason;
  waitingFor: string;
  /** The record announcing the wait, written at suspension if not yet journaled. */
  record?: Unstamped<StepRecord>;
  /** For waits: the signal name, re-checked after suspension to close the delivery race. */
  signal?: string;
}

export type Outcome =
  | { type: "completed"; result: unknown }
  | { type: "failed"; error: SerializedError; nondeterminism?: boolean }
  | { type: "suspended"; blockers: Blocker[] }
  /** A cancellation was delivered and the workflow then ended (returned or threw). */
  | { type: "cancelled"; reason: string; result?: unknown }
  /** `step.continueAsNew(input)`: the next incarnation starts with this input. */
  | { type: "continued"; input: unknown }
  /** Ended for a reason outside the workflow: a journal write failed, or the lease was lost. */
  | { type: "aborted"; error: unknown; leaseLost: boolean };

/** One step event, for logs and the demo: replayed steps are reported as such. */
export interface StepEvent {
  runId: string;
  stepId: string;
  kind: "run" | "sleep" | "wait";
  outcome: "replayed" | "completed" | "failed" | "retrying" | "blocked" | "resolved";
  attempt?: number;
  durationMs?: number;
}

export interface ExecutionOptions {
  runId: string;
  workflow: AnyWorkflow;
  input: unknown;
  journal: JournalView;
  now: () => number;
  /** Where timeouts and deferred checks are scheduled. Default: Node's timers. */
  timers?: Timers;
  /**
   * Appends a record write-once; resolves to the record that won (ours or the existing one), and
   * — when the append looked — the reason of a cancellation the journal holds (`null`: none).
   */
  append: (record: JournalRecord) => Promise<{ record: JournalRecord; won: boolean; cancel?: string | null | undefined }>;
  /**
   * `step.transact`: commits the user's writes with the step's record (run/transact.ts). Absent:
   * this runtime cannot, and the step fails with `TransactUnsupportedError`.
   */
  transact?: (record: RunStepRecord, ops: readonly TxOp[]) => Promise<Transacted>;
  /** True when the invocation should checkpoint before starting another step (Lambda time). */
  shouldYield?: () => boolean;
  /** False once the lease is known to be lost (a renewal was refused): no new step starts. */
  ownsLease?: () => boolean;
  /**
   * Check a history instead of running it: no step body runs and nothing is stored. A step the
   * journal does not have ends the check there (the frontier), unless the journal still holds
   * steps the code has not reached: then the code tells another story (`NonDeterminismError`).
   */
  replayOnly?: boolean;
  /**
   * Where this incarnation's records live and what idempotency keys and randomness are derived
   * from: the run id in the first incarnation, `<runId>~<k>` after (see incarnation.ts). Default: `runId`.
   */
  journalId?: string;
  /** Which incarnation this is (1 unless continued); children started from it carry it. */
  incarnation?: number;
  /** Starts and cancels child runs (`step.invoke`, `step.start`). */
  children?: ChildPort;
  /** The reason of a cancellation already requested when the execution starts. */
  cancelReason?: string;
  /** The run's grant count for this invocation, stamped on every record it writes. */
  invocation?: number;
  /** Largest step result, as JSON bytes, the journal takes. Default {@link DEFAULT_MAX_VALUE_BYTES}. */
  maxValueBytes?: number;
  /**
   * Where values over the inline threshold go by reference; `maxValueBytes` is then its hard cap
   * (`payloads.maxBytes`). Without it, values over `maxValueBytes` are refused.
   */
  payloads?: Payloads;
  /** Mints the links `waitForSignal({ notify })` hands out. */
  links?: ApprovalLinks;
  /** The run's `createdAt`, which links are bound to (a later run reusing the id gets other links). */
  runCreatedAt: number;
  onStep?: (event: StepEvent) => void;
  /** A `step.log` line the code reached for the first time (replayed lines are not reported). */
  onLog?: (line: StepLogLine) => void;
  /** Wraps each attempt of a step body (tracing: a span around it). */
  aroundAttempt?: AttemptHook;
}

/** A line written through `step.log`. */
export interface StepLogLine {
  level: "info" | "warn" | "error";
  message: string;
  /** The step the code reached last before the line (none before the first step). */
  stepId?: string;
  attributes: Readonly<Record<string, unknown>>;
}

/** What an attempt hook is told about the attempt it wraps. */
export interface AttemptInfo {
  runId: string;
  workflow: string;
  stepId: string;
  attempt: number;
}

/** Runs `body` (one attempt of a step), around it whatever the host needs; returns its result. */
export type AttemptHook = <T>(attempt: AttemptInfo, body: () => Promise<T>) => Promise<T>;

