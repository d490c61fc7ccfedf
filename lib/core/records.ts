/**
 * The journal's record formats. Stores keep records as opaque JSON under a key; the engine
 * parses every record it loads with these schemas, so a record written by another code version
 * (or corrupted) is a {@link JournalFormatError} naming the record, never a silent misreading.
 *
 * Keys (unique within a run; `#` never occurs in a step name):
 *   step#<stepId>          a step's record: a finished `run`, a `sleep`, a `wait`
 *   attempt#<stepId>#<n>   a failed attempt of a `run` step that will be retried
 *   resolution#<stepId>    how a wait was resolved: a signal or its timeout (write-once: the race)
 *   signal#<signalId>      a delivered signal (write-once: idempotent delivery)
 *   start#<stepId>#<n>     attempt n of an at-most-once step is about to run its body
 *   cancel                 the run was asked to cancel, with the reason
 *   parent                 a child run's parent and the wait its end resolves
 *   delivery#<signalId>    in the first journal only: the incarnation (past the first) a signal
 *                          id was delivered to, so that a retried delivery is never made twice
 *   place#<stepId>         where replay delivers a step's result that landed late, after an
 *                          invocation that held the lease had loaded the journal without it
 */
import * as z from "./shape.ts";
import { JournalFormatError } from "./errors.ts";

/** The record format this code writes. Records of other versions are refused, loudly. */
export const JOURNAL_VERSION = 1;

const SerializedErrorSchema = z.object({
  name: z.string(),
  message: z.string(),
  fields: z.record(z.string(), z.unknown()).optional(),
  stack: z.string().optional(),
});

/** A value kept in the payload store instead of the record (see payloads.ts). */
const PayloadRefSchema = z.object({ key: z.string(), sha256: z.string(), bytes: z.number().int().nonnegative() });

const common = {
  v: z.literal(JOURNAL_VERSION),
  /** When the record was written (epoch ms, the writer's clock). */
  at: z.number(),
  /** Values of `step.now()` taken since the previous write, by ordinal (see context.ts). */
  marks: z.record(z.string(), z.number()).optional(),
  /** The invocation (the run's grant count) that wrote the record; absent in older journals. */
  inv: z.number().int().positive().optional(),
};

export const RunStepRecord = z.object({
  ...common,
  type: z.literal("step"),
  kind: z.literal("run"),
  stepId: z.string(),
  status: z.enum(["ok", "failed"]),
  result: z.unknown().optional(),
  /** Set instead of `result` when the result is in the payload store. */
  resultRef: PayloadRefSchema.optional(),
  error: SerializedErrorSchema.optional(),
  attempts: z.number().int().positive(),
  startedAt: z.number(),
  /** Position of this result's delivery to the workflow, run-wide (see delivery-order.ts). */
  seq: z.number().int().positive().optional(),
  /** `at-most-once` steps; `exactly-once`: a `step.transact` (its writes committed with this record); absent means at-least-once. */
  semantics: z.enum(["at-most-once", "exactly-once"]).optional(),
  /**
   * At-least-once steps: earlier invocations that may have run this body and died before
   * recording it (see `JournalView.possibleReruns`), so the body ran between `attempts` and
   * `attempts + possibleReruns` times.
   */
  possibleReruns: z.number().int().nonnegative().optional(),
});

export const SleepRecord = z.object({
  ...common,
  type: z.literal("step"),
  kind: z.literal("sleep"),
  stepId: z.string(),
  wakeAt: z.number(),
  /** When the sleep began (its record may be written later, when the run suspends); absent in journals of earlier versions. */
  startedAt: z.number().optional(),
});

export const WaitRecord = z.object({
  ...common,
  type: z.literal("step"),
  kind: z.literal("wait"),
  stepId: z.string(),
  signal: z.string(),
  timeoutAt: z.number().optional(),
  /** What the workflow said the wait is about (`waitForSignal({ summary })`), shown on the approver's page. */
  summary: z.string().optional(),
});

export const AttemptRecord = z.object({
  ...common,
  type: z.literal("attempt"),
  stepId: z.string(),
  attempt: z.number().int().positive(),
  error: SerializedErrorSchema,
  retryAt: z.number(),
  startedAt: z.number(),
});

export const ResolutionRecord = z.object({
  ...common,
  type: z.literal("resolution"),
  stepId: z.string(),
  /** `cancelled`: the run's cancellation was delivered here (a sleep or a wait threw CancelledError). `woken`: a sleep ended early (`client.wake`), or ended by its time while a cancellation was pending (journaled, so a late cancellation cannot reopen it). */
  via: z.enum(["signal", "timeout", "cancelled", "woken"]),
  signalId: z.string().optional(),
});

/** Who sent a signal: `verified` when an approver-bound link proved it, else only claimed. */
export const SignalSender = z.object({ id: z.string(), verified: z.boolean() });

export const SignalRecord = z.object({
  ...common,
  type: z.literal("signal"),
  signalId: z.string(),
  name: z.string(),
  /** Absent when the payload is in the payload store (`payloadRef`). */
  payload: z.unknown().optional(),
  /** Set instead of `payload` when the payload is in the payload store. */
  payloadRef: PayloadRefSchema.optional(),
  /** Set when the signal was sent to one wait (e.g. through its approval link): no other wait may take it. */
  waitId: z.string().optional(),
  /** Absent in journals written before senders were recorded, and when nobody was named. */
  sender: SignalSender.optional(),
});

export const StartRecord = z.object({
  ...common,
  type: z.literal("start"),
  stepId: z.string(),
  attempt: z.number().int().positive(),
});

/** In a child run's journal: the parent whose wait its end resolves (`step.invoke`). Key `parent`. */
export const ParentRecord = z.object({
  ...common,
  type: z.literal("parent"),
  runId: z.string(),
  waitId: z.string(),
  incarnation: z.number().int().positive().optional(),
  /** The parent deployment's wake queue, when the parent runs in another deployment. */
  replyTo: z.string().optional(),
});

/**
 * In the run's first journal: which incarnation (past the first) a signal id was delivered to.
 * Write-once, key `delivery#<signalId>`; the first journal is never executed again by then.
 */
export const DeliveryRecord = z.object({
  ...common,
  type: z.literal("delivery"),
  signalId: z.string(),
  incarnation: z.number().int().positive(),
});

/**
 * Where replay delivers a `run` step's result that an invocation which had lost its lease wrote
 * after the lease's holder loaded the journal: the holder never saw it, so it is delivered after
 * every position recorded when it was found (delivery-order.ts). Write-once, key
 * `place#<stepId>`; written by the invocation that found it, before its code runs.
 */
export const PlaceRecord = z.object({
  ...common,
  type: z.literal("place"),
  stepId: z.string(),
  seq: z.number().int().positive(),
});

/** A request to cancel the run (`client.cancel`, or the run's own timeout): write-once, key `cancel`. */
export const CancelRecord = z.object({
  ...common,
  type: z.literal("cancel"),
  reason: z.string(),
});

const StepRecordSchema = z.discriminatedUnion("kind", [RunStepRecord, SleepRecord, WaitRecord]);

export type RunStepRecord = z.infer<typeof RunStepRecord>;
export type SleepRecord = z.infer<typeof SleepRecord>;
export type WaitRecord = z.infer<typeof WaitRecord>;
/** The record of a step: a `run` step's outcome, a sleep's wake time, or a wait's deadline. */
export type StepRecord = RunStepRecord | SleepRecord | WaitRecord;
/** A failed attempt of a step: its error and when the next attempt is due. */
export type AttemptRecord = z.infer<typeof AttemptRecord>;
/**
 * How a sleep or a wait was decided (a signal, its timeout, a cancel, an early wake), written
 * once.
 */
export type ResolutionRecord = z.infer<typeof ResolutionRecord>;
/**
 * A delivered signal: its id, name, payload and sender, kept in the journal whether or not a wait
 * consumed it.
 */
export type SignalRecord = z.infer<typeof SignalRecord>;
export type StartRecord = z.infer<typeof StartRecord>;
export type CancelRecord = z.infer<typeof CancelRecord>;
export type ParentRecord = z.infer<typeof ParentRecord>;
export type DeliveryRecord = z.infer<typeof DeliveryRecord>;
export type PlaceRecord = z.infer<typeof PlaceRecord>;
export type SignalSender = z.infer<typeof SignalSender>;
/**
 * Any record of a run's journal: steps, attempts, resolutions, signals, start markers, the cancel,
 * the parent, deliveries and the places of late results.
 */
export type JournalRecord = StepRecord | AttemptRecord | ResolutionRecord | SignalRecord | StartRecord | CancelRecord | ParentRecord | DeliveryRecord | PlaceRecord;
/** A record body before the writer stamps version and time. */
export type Unstamped<T> = T extends unknown ? Omit<T, "v" | "at"> : never;

export const keys = {
  step: (stepId: string) => `step#${stepId}`,
  attempt: (stepId: string, n: number) => `attempt#${stepId}#${n}`,
  resolution: (stepId: string) => `resolution#${stepId}`,
  signal: (signalId: string) => `signal#${signalId}`,
  start: (stepId: string, n: number) => `start#${stepId}#${n}`,
  cancel: () => "cancel",
  parent: () => "parent",
  delivery: (signalId: string) => `delivery#${signalId}`,
  place: (stepId: string) => `place#${stepId}`,
};

/** The key a record is stored under. */
export function keyOf(r: JournalRecord): string {
  switch (r.type) {
    case "step":
      return keys.step(r.stepId);
    case "attempt":
      return keys.attempt(r.stepId, r.attempt);
    case "resolution":
      return keys.resolution(r.stepId);
    case "signal":
      return keys.signal(r.signalId);
    case "start":
      return keys.start(r.stepId, r.attempt);
    case "cancel":
      return keys.cancel();
    case "parent":
      return keys.parent();
    case "delivery":
      return keys.delivery(r.signalId);
    case "place":
      return keys.place(r.stepId);
  }
}

function schemaFor(body: unknown) {
  const type = typeof body === "object" && body !== null ? (body as { type?: unknown }).type : undefined;
  switch (type) {
    case "step":
      return StepRecordSchema;
    case "attempt":
      return AttemptRecord;
    case "resolution":
      return ResolutionRecord;
    case "signal":
      return SignalRecord;
    case "start":
      return StartRecord;
    case "cancel":
      return CancelRecord;
    case "parent":
      return ParentRecord;
    case "delivery":
      return DeliveryRecord;
    case "place":
      return PlaceRecord;
    default:
      return undefined;
  }
}

/** Parses one stored record; throws {@link JournalFormatError} naming it if this code cannot read it. */
export function parseRecord(runId: string, key: string, body: unknown): JournalRecord {
  const version = typeof body === "object" && body !== null ? (body as { v?: unknown }).v : undefined;
  if (version !== JOURNAL_VERSION) {
    throw new JournalFormatError(runId, key, `record format version ${JSON.stringify(version)}, this code reads version ${JOURNAL_VERSION}`);
  }
  const schema = schemaFor(body);
  if (!schema) throw new JournalFormatError(runId, key, `unknown record type ${JSON.stringify((body as { type?: unknown }).type)}`);
  const parsed = schema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new JournalFormatError(runId, key, `${issue?.path.join(".") || "(root)"}: ${issue?.message ?? "invalid"}`);
  }
  const record = parsed.data as JournalRecord;
  if (keyOf(record) !== key) throw new JournalFormatError(runId, key, `record belongs under key "${keyOf(record)}"`);
  return record;
}
